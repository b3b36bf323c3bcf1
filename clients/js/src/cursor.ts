import { decodeTurnEvent, isDecoded, isSafeId, type SnapshotEvent, type TurnEvent } from "./protocol.js";

/**
 * SnapshotCursor holds the newest snapshot of one session. It accepts only
 * valid server.turn.snapshot events of its session whose sequence is
 * strictly greater than the held one's (any sequence, 0 included, for the
 * first), so duplicate, stale, reordered and foreign deliveries are inert.
 * A live stream and a resumed one share one cursor and never apply a
 * snapshot twice. Accepted snapshots are deep-frozen and replace each
 * other whole; messages are never merged.
 */
export class SnapshotCursor {
  readonly sessionId: string;
  #snapshot: SnapshotEvent | undefined;

  /** @throws TypeError when sessionId is not a SafeId. */
  constructor(sessionId: string) {
    if (!isSafeId(sessionId)) throw new TypeError("turnstream: session id is not a SafeId");
    this.sessionId = sessionId;
  }

  /** The held snapshot, or undefined before the first is accepted. */
  get snapshot(): SnapshotEvent | undefined {
    return this.#snapshot;
  }

  /** The sequence of the held snapshot, or undefined before the first. */
  get sequence(): number | undefined {
    return this.#snapshot?.sequence;
  }

  /**
   * apply offers one event: a line as text or bytes, or an event object.
   * Anything but an event decodeTurnEvent returned is decoded first (an
   * object as its JSON text), so nothing unvalidated is ever held. It
   * returns true when the snapshot was accepted; on false nothing changes.
   */
  apply(input: TurnEvent | string | Uint8Array | object): boolean {
    let ev: TurnEvent;
    if (typeof input === "object" && !(input instanceof Uint8Array) && input !== null && isDecoded(input)) {
      ev = input;
    } else {
      let line: string | Uint8Array | undefined;
      if (typeof input === "string" || input instanceof Uint8Array) line = input;
      else {
        try {
          line = JSON.stringify(input);
        } catch {
          return false; // a cycle or a BigInt: not an event
        }
      }
      if (line === undefined) return false;
      const r = decodeTurnEvent(line);
      if (!r.ok) return false;
      ev = r.event;
    }
    if (ev.event !== "server.turn.snapshot" || ev.sessionId !== this.sessionId) return false;
    if (this.#snapshot !== undefined && ev.sequence <= this.#snapshot.sequence) return false;
    this.#snapshot = ev; // deep-frozen by decodeTurnEvent
    return true;
  }
}
