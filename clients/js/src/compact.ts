// The compact stream extension (docs/compact.md): append lines between
// complete snapshots. This decoder mirrors turnstream's Go one
// (pkg/protocol DecodeAppend and DecodePartialAppend).

import { NOT_JSON, parseStrict, type JSONValue } from "./json.js";
import { isCaseVariant, MAX_SAFE_INTEGER, TURN_PROTOCOL, type Usage } from "./protocol.js";

/** The append lines' event kind. */
export const EVENT_APPEND = "turnstream.turn.append";

/**
 * AppendLine adds text to the streaming assistant message (the last
 * message) of the state at sequence after, giving the state at sequence.
 * It names no session or turn: it belongs to the stream that carries it.
 */
export interface AppendLine {
  /** The state this line produces (> after). */
  sequence: number;
  /** The sequence of the state it applies to. */
  after: number;
  /** That state's assistant content length in UTF-16 code units (String#length). */
  offset: number;
  /** Replaces the snapshot's usage when present. */
  usage?: Usage;
  /**
   * Added to the message's metadata.reasoning before text, when present;
   * offset is that reasoning's length in UTF-16 code units in the state at
   * after (0 when it has none).
   */
  reasoning?: { offset: number; text: string };
  text: string;
}

const PREFIX = `{"protocol":"${TURN_PROTOCOL}","version":1,"event":"${EVENT_APPEND}"`;
const TEXT_MEMBER = `,"text":"`;
const FIELDS = ["protocol", "version", "event", "sequence", "after", "offset", "usage", "reasoning", "text"];
const REASONING_FIELDS = ["offset", "text"];
const USAGE_FIELDS = ["promptTokens", "completionTokens", "totalTokens"];
const enc = new TextEncoder();
const PREFIX_BYTES = enc.encode(PREFIX);
const TEXT_BYTES = enc.encode(TEXT_MEMBER);
const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

type Obj = { [key: string]: JSONValue };
const isObj = (v: JSONValue | undefined): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);
const isInt = (v: JSONValue | undefined, lo: number): v is number =>
  typeof v === "number" && Number.isInteger(v) && v >= lo && v <= MAX_SAFE_INTEGER;

/** isAppendLine reports whether a line begins as an append line does (a quick test, not validation). */
export function isAppendLine(line: string | Uint8Array): boolean {
  if (typeof line === "string") return line.startsWith(PREFIX);
  return startsWith(line, PREFIX_BYTES);
}

function startsWith(b: Uint8Array, p: Uint8Array): boolean {
  if (b.length < p.length) return false;
  for (let i = 0; i < p.length; i++) if (b[i] !== p[i]) return false;
  return true;
}

/**
 * decodeAppend decodes one complete append line from untrusted input (a
 * string or UTF-8 bytes), or returns undefined when it breaks the grammar:
 * not strict JSON, another kind, a case variant of a member, integers outside 0 <= after < sequence <= 2^53-1 or a
 * negative offset, a usage object that is not the snapshot's, a reasoning
 * that is not {offset, text}, text not a string. Unknown members are ignored. It never throws.
 */
export function decodeAppend(input: string | Uint8Array): AppendLine | undefined {
  let text: string;
  try {
    text = typeof input === "string" ? input : utf8.decode(input);
  } catch {
    return undefined;
  }
  const v = parseStrict(text);
  if (v === NOT_JSON || !isObj(v)) return undefined;
  for (const k in v) if (isCaseVariant(k, FIELDS)) return undefined;
  if (v.protocol !== TURN_PROTOCOL || v.version !== 1 || v.event !== EVENT_APPEND) return undefined;
  const { sequence, after, offset, usage } = v;
  if (!isInt(sequence, 1) || !isInt(after, 0) || after >= sequence || !isInt(offset, 0)) {
    return undefined;
  }
  if (typeof v.text !== "string") return undefined;
  const out: AppendLine = { sequence, after, offset, text: v.text };
  if (Object.prototype.hasOwnProperty.call(v, "usage")) {
    if (!isObj(usage)) return undefined;
    for (const k in usage) if (isCaseVariant(k, USAGE_FIELDS)) return undefined;
    const { promptTokens, completionTokens, totalTokens } = usage;
    if (!isInt(promptTokens, 0) || !isInt(completionTokens, 0) || !isInt(totalTokens, 0)) return undefined;
    out.usage = { promptTokens, completionTokens, totalTokens };
  }
  if (Object.prototype.hasOwnProperty.call(v, "reasoning")) {
    const r = v.reasoning;
    if (!isObj(r)) return undefined;
    for (const k in r) if (isCaseVariant(k, REASONING_FIELDS)) return undefined;
    if (!isInt(r.offset, 0) || typeof r.text !== "string") return undefined;
    out.reasoning = { offset: r.offset, text: r.text };
  }
  return out;
}

/**
 * decodePartialAppend reads the beginning of an append line whose end has
 * not arrived: its members before text (written in the grammar's order)
 * and the longest prefix of its text that ends on a whole character and a
 * whole escape. Undefined when partial is not the beginning of a valid
 * append line or its text member has not begun. The text is provisional:
 * the state at its sequence exists only once the line has ended.
 */
export function decodePartialAppend(partial: Uint8Array): AppendLine | undefined {
  if (!startsWith(partial, PREFIX_BYTES)) return undefined;
  const at = indexOf(partial, TEXT_BYTES);
  if (at < 0) return undefined;
  const headEnd = at + TEXT_BYTES.length;
  const head = new Uint8Array(headEnd + 2);
  head.set(partial.subarray(0, headEnd));
  head[headEnd] = 0x22; // "
  head[headEnd + 1] = 0x7d; // }
  const a = decodeAppend(head);
  if (!a) return undefined;
  const body = partial.subarray(headEnd);
  const n = completePrefix(body);
  if (n === 0) return a;
  let inner: string;
  try {
    inner = utf8.decode(body.subarray(0, n));
  } catch {
    return undefined;
  }
  const s = parseStrict(`"${inner}"`);
  if (typeof s !== "string") return undefined;
  a.text = s;
  return a;
}

function indexOf(b: Uint8Array, p: Uint8Array): number {
  search: for (let i = 0; i + p.length <= b.length; i++) {
    for (let j = 0; j < p.length; j++) if (b[i + j] !== p[j]) continue search;
    return i;
  }
  return -1;
}

// completePrefix returns the length of the longest prefix of body (the
// inside of a JSON string cut anywhere) that ends on a whole UTF-8
// character and a whole escape, before the closing quote. A high-surrogate
// escape is whole only with its low surrogate.
function completePrefix(body: Uint8Array): number {
  let n = 0;
  for (let i = 0; i < body.length; ) {
    const c = body[i]!;
    if (c === 0x22) return n;
    if (c === 0x5c) {
      if (i + 1 >= body.length) return n;
      if (body[i + 1] !== 0x75) {
        i += 2;
        n = i;
        continue;
      }
      if (i + 6 > body.length) return n;
      const r = parseInt(String.fromCharCode(...body.subarray(i + 2, i + 6)), 16);
      if (r >= 0xd800 && r < 0xdc00) {
        if (i + 12 > body.length) return n;
        i += 12;
      } else i += 6;
      n = i;
      continue;
    }
    const size = c < 0x80 ? 1 : c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
    if (i + size > body.length) return n;
    i += size;
    n = i;
  }
  return n;
}
