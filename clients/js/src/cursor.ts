import type { AppendLine } from "./compact.js";
import { decodeTurnEvent, isDecoded, isSafeId, type Message, type SnapshotEvent, type TurnEvent } from "./protocol.js";
import { METADATA_REASONING } from "./wire.js";

/**
 * AppendResult says what SnapshotCursor.applyAppend did with an append
 * line: "applied" (the state moved to its sequence), "stale" (its sequence
 * is not above the held one: ignored) or "gap" (newer, but not built on the
 * held state: ignored; wait for the next complete snapshot, or resume
 * after the held sequence).
 */
export type AppendResult = "applied" | "stale" | "gap";

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

  /**
   * applyAppend offers a decoded append line of the compact stream
   * (docs/compact.md), read from a stream of this cursor's session. It
   * applies only to the exact state it was built on: its after is the held
   * sequence, the held snapshot streaming with its last message a
   * streaming assistant message of offset UTF-16 code units. The held
   * snapshot is then replaced by a frozen copy with the text appended, the
   * line's usage (when given) and its sequence.
   */
  applyAppend(a: AppendLine): AppendResult {
    const held = this.#snapshot;
    if (held !== undefined && a.sequence <= held.sequence) return "stale";
    if (!this.#builtOn(a)) return "gap";
    const msgs = held!.payload.messages;
    const last = msgs[msgs.length - 1]!;
    const grown: Message = { ...last, content: last.content + a.text };
    if (a.reasoning) grown.metadata = { ...last.metadata, [METADATA_REASONING]: reasoningOf(last) + a.reasoning.text };
    const next: SnapshotEvent = {
      ...held!,
      sequence: a.sequence,
      payload: {
        ...held!.payload,
        messages: [...msgs.slice(0, -1), grown],
        usage: a.usage ?? held!.payload.usage,
      },
    };
    this.#snapshot = freeze(next);
    return "applied";
  }

  /**
   * provisional returns the held snapshot with the text received so far of
   * an open append line (decodePartialAppend), when that line is built on
   * the held state; undefined otherwise. Nothing changes: the text becomes
   * state only when its line ends.
   */
  provisional(a: AppendLine): SnapshotEvent | undefined {
    const held = this.#snapshot;
    if (held === undefined || a.sequence <= held.sequence || !this.#builtOn(a)) return undefined;
    const msgs = held.payload.messages;
    const last = msgs[msgs.length - 1]!;
    return freeze({ ...held, payload: { ...held.payload, messages: [...msgs.slice(0, -1), { ...last, content: last.content + a.text }] } });
  }

  #builtOn(a: AppendLine): boolean {
    const held = this.#snapshot;
    if (held === undefined || a.after !== held.sequence || held.payload.status !== "streaming") return false;
    const last = held.payload.messages[held.payload.messages.length - 1];
    return (
      last !== undefined &&
      last.role === "assistant" &&
      last.status === "streaming" &&
      last.content.length === a.offset &&
      (a.reasoning === undefined || reasoningOf(last).length === a.reasoning.offset)
    );
  }
}

/** reasoningOf is a message's metadata.reasoning, "" when it has none. */
function reasoningOf(m: Message): string {
  const r = m.metadata?.[METADATA_REASONING];
  return typeof r === "string" ? r : "";
}

function freeze<T extends object>(v: T): T {
  Object.freeze(v);
  const p = (v as unknown as SnapshotEvent).payload;
  if (p && !Object.isFrozen(p)) {
    Object.freeze(p);
    Object.freeze(p.messages);
    for (const m of p.messages) Object.freeze(m);
    Object.freeze(p.usage);
  }
  return v;
}
