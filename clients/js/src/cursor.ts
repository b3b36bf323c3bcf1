import { decodeTurnEvent, isSafeId, type SnapshotEvent, type TurnEvent } from "./protocol.js";

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
   * apply offers one event: a decoded TurnEvent, or a line as text or
   * bytes, which is decoded first. It returns true when the snapshot was
   * accepted; on false nothing changes.
   */
  apply(input: TurnEvent | string | Uint8Array): boolean {
    let ev: TurnEvent;
    if (typeof input === "string" || input instanceof Uint8Array) {
      const r = decodeTurnEvent(input);
      if (!r.ok) return false;
      ev = r.event;
    } else {
      ev = input;
    }
    if (ev.event !== "server.turn.snapshot" || ev.sessionId !== this.sessionId) return false;
    if (this.#snapshot !== undefined && ev.sequence <= this.#snapshot.sequence) return false;
    this.#snapshot = deepFreeze(structuredClone(ev));
    return true;
  }
}

function deepFreeze<T>(v: T): T {
  if (typeof v === "object" && v !== null && !Object.isFrozen(v)) {
    Object.freeze(v);
    for (const k of Object.keys(v)) deepFreeze((v as Record<string, unknown>)[k]);
  }
  return v;
}
