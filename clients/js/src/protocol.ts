// The turn protocol's event decoder, mirroring turnstream's Go decoder
// (pkg/protocol DecodeTurnEvent) result for result: the same accepted
// events with unknown keys dropped, the same diagnostics with their fixed
// messages, and no input byte in a diagnostic except a valid eventId.

import { NOT_JSON, parseStrict, type JSONValue } from "./json.js";

/** The envelope's protocol name. */
export const TURN_PROTOCOL = "agentskit.chat.turn";
/** The only envelope version spoken. */
export const TURN_VERSION = 1;
/** JavaScript's Number.MAX_SAFE_INTEGER, the bound of every integer field. */
export const MAX_SAFE_INTEGER = 2 ** 53 - 1;

/** Limits of a canonical message record (every JSON value is a node). */
export const MAX_RECORD_NODES = 10_000;
export const MAX_RECORD_DEPTH = 32;
export const MAX_RECORD_ITEMS = 10_000;
export const MAX_RECORD_KEY = 256;

/** Fixed decoder messages. */
export const MESSAGE_NOT_JSON = "Turn event is not valid JSON.";
const MESSAGES: Record<DecoderCode, string> = {
  PROTOCOL_UNSUPPORTED_VERSION: "Turn event uses an unsupported protocol version.",
  PROTOCOL_UNKNOWN_EVENT: "Turn event kind is unknown.",
  PROTOCOL_INVALID_PAYLOAD: "Turn event payload is invalid.",
};

export type DecoderCode = "PROTOCOL_UNSUPPORTED_VERSION" | "PROTOCOL_UNKNOWN_EVENT" | "PROTOCOL_INVALID_PAYLOAD";

/** TurnDiagnostic: a wire diagnostic (snapshot error, stream line, HTTP error body). */
export interface TurnDiagnostic {
  version: 1;
  /** UPPER_SNAKE code, e.g. SESSION_BUSY. */
  code: string;
  /** A fixed, non-empty message; never user input. */
  message: string;
  /** Whether the same request may succeed later. */
  retryable: boolean;
}

/** DecoderDiagnostic: why a line is not a valid turn event. */
export interface DecoderDiagnostic {
  code: DecoderCode;
  message: string;
  retryable: false;
  /** The input's eventId, only when it is a valid SafeId. */
  eventId?: string;
}

export type Role = "user" | "assistant" | "system" | "tool";
export type MessageStatus = "pending" | "streaming" | "complete" | "error";
export type ToolCallStatus = "pending" | "running" | "complete" | "error" | "requires_confirmation";
export type SnapshotStatus = "idle" | "streaming" | "complete" | "error";

export interface ToolCall {
  id: string;
  name: string;
  /** The call's arguments, a JSON object kept verbatim. */
  args: { [key: string]: JSONValue };
  status: ToolCallStatus;
  result?: string;
  error?: string;
}

export type Part =
  | { type: "text"; text: string }
  | { type: "image"; source: string; mimeType?: string; detail?: "low" | "high" | "auto" }
  | { type: "audio" | "video"; source: string; mimeType?: string; durationSec?: number }
  | { type: "file"; source: string; mimeType?: string; filename?: string };

/** Message is one canonical message record. */
export interface Message {
  id: string;
  role: Role;
  content: string;
  status: MessageStatus;
  /** YYYY-MM-DDTHH:MM:SS.mmmZ */
  createdAt: string;
  parts?: Part[];
  toolCalls?: ToolCall[];
  toolCallId?: string;
  /** Any JSON object, kept verbatim (history puts artifact references in metadata.artifacts). */
  metadata?: { [key: string]: JSONValue };
}

export interface Usage {
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
}

export type Lineage =
  | { operation: "submit" }
  | { operation: "retry" | "edit" | "regenerate"; parentTurnId: string; sourceMessageId: string };

export interface SnapshotPayload {
  messages: Message[];
  status: SnapshotStatus;
  usage: Usage;
  error?: TurnDiagnostic;
  lineage?: Lineage;
}

interface Envelope<K extends string, P> {
  protocol: typeof TURN_PROTOCOL;
  version: 1;
  eventId: string;
  sessionId: string;
  turnId: string;
  /** Per-session snapshot sequence, an integer >= 0. */
  sequence: number;
  emittedAt: string;
  event: K;
  payload: P;
}

/**
 * SubmitConfirmation is a submit payload's decision on a tool call waiting
 * for approval (a turnstream extension): the pending confirmation's token
 * and "approve" or "deny".
 */
export interface SubmitConfirmation {
  /** The token of metadata.pendingConfirmations or a pendingInteraction's interactionId (a SafeId). */
  token: string;
  decision: Decision;
}

/** Decision is what a decision turn does with the waiting tool call. */
export type Decision = "approve" | "deny";

/**
 * MAX_SUBMIT_ATTACHMENTS is how many attachment ids one submit may name
 * (pkg/protocol MaxSubmitAttachments; docs/attachments.md).
 */
export const MAX_SUBMIT_ATTACHMENTS = 25;

export interface SubmitPayload {
  input: string;
  lineage?: Lineage;
  confirmation?: SubmitConfirmation;
  /**
   * The files uploaded to the session that go with this turn (a turnstream
   * extension, docs/attachments.md): 1..MAX_SUBMIT_ATTACHMENTS distinct
   * SafeIds, the ids uploadAttachment returned. Absent when none.
   */
  attachments?: string[];
}

export type SubmitEvent = Envelope<"client.turn.submit", SubmitPayload>;
export type SnapshotEvent = Envelope<"server.turn.snapshot", SnapshotPayload>;
export type DiagnosticEvent = Envelope<"server.turn.diagnostic", TurnDiagnostic>;
export type TurnEvent = SubmitEvent | SnapshotEvent | DiagnosticEvent;

export type DecodeResult = { ok: true; event: TurnEvent } | { ok: false; diagnostic: DecoderDiagnostic };

type Obj = { [key: string]: JSONValue };

const has = (o: Obj, k: string): boolean => Object.prototype.hasOwnProperty.call(o, k);
const isObj = (v: JSONValue | undefined): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);

// A rejection inside the schema walk; caught once in decodeTurnEvent.
class Invalid {}
const invalid = new Invalid();
function need(cond: boolean): asserts cond {
  if (!cond) throw invalid;
}

// The fields of each object the decoder reads, for the case-variant rule
// (hasVariant). A part's and a lineage's lists hold the fields of every
// kind of part and every operation.
const ENVELOPE = ["protocol", "version", "eventId", "sessionId", "turnId", "sequence", "emittedAt", "event", "payload"];
const EVENT_ID = ["eventId"];
const SUBMIT = ["input", "lineage", "confirmation", "attachments"];
const CONFIRMATION = ["token", "decision"];
const LINEAGE = ["operation", "parentTurnId", "sourceMessageId"];
const SNAPSHOT = ["messages", "status", "usage", "error", "lineage"];
const USAGE = ["promptTokens", "completionTokens", "totalTokens"];
const DIAGNOSTIC = ["version", "code", "message", "retryable"];
const MESSAGE = ["id", "role", "content", "status", "createdAt", "parts", "toolCalls", "toolCallId", "metadata"];
const PART = ["type", "text", "source", "mimeType", "detail", "durationSec", "filename"];
const TOOL_CALL = ["id", "name", "args", "status", "result", "error"];

/**
 * isCaseVariant reports whether key equals one of the field names case-
 * insensitively but not exactly, as Go's strings.EqualFold compares them
 * (Unicode simple case folding, the rule Go's encoding/json uses to match
 * keys to fields). The names are ASCII, and the only characters outside
 * ASCII whose simple-folding orbit holds an ASCII letter are U+017F LATIN
 * SMALL LETTER LONG S (with s and S) and U+212A KELVIN SIGN (with k and
 * K); U+0130 and U+0131 do not fold with i, and "ß" is not "ss" (no full
 * folding). Such a key would be read as the field by a Go reader and
 * ignored here: one text, two readings, so the decoder rejects it.
 */
export function isCaseVariant(key: string, names: readonly string[]): boolean {
  if (names.includes(key)) return false;
  search: for (const name of names) {
    if (name.length !== key.length) continue;
    for (let i = 0; i < name.length; i++) {
      const a = key.charCodeAt(i);
      const b = name.charCodeAt(i);
      if (a === b) continue;
      const lower = b | 0x20; // b's lower case, when b is a letter
      if (lower < 0x61 || lower > 0x7a) continue search; // not a letter: only itself
      if ((a < 0x80 && (a | 0x20) === lower) || (a === 0x17f && lower === 0x73) || (a === 0x212a && lower === 0x6b)) continue;
      continue search;
    }
    return true;
  }
  return false;
}

// hasVariant reports whether the object o has a key that is a case variant
// of one of its fields.
function hasVariant(o: Obj, names: readonly string[]): boolean {
  for (const k in o) if (isCaseVariant(k, names)) return true;
  return false;
}

/** isSafeId: 1-128 ASCII characters, [A-Za-z0-9] then [A-Za-z0-9._:-]. */
export function isSafeId(s: unknown): s is string {
  return typeof s === "string" && /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/.test(s);
}

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

// Events decodeTurnEvent produced: deep-frozen, so still valid when offered
// to a SnapshotCursor later.
const decoded = new WeakSet<object>();

/** isDecoded reports whether ev came from decodeTurnEvent (and so is valid and frozen). */
export function isDecoded(ev: object): ev is TurnEvent {
  return decoded.has(ev);
}

function deepFreeze<T>(v: T): T {
  if (typeof v === "object" && v !== null && !Object.isFrozen(v)) {
    Object.freeze(v);
    for (const k of Object.keys(v)) deepFreeze((v as Record<string, unknown>)[k]);
  }
  return v;
}

/**
 * decodeTurnEvent decodes one turn event from untrusted input: a string, or
 * UTF-8 bytes (invalid UTF-8 is not JSON; a byte-order mark is not skipped).
 * The text is parsed once with the strict reader, so a JSON string holding
 * an event is invalid. It never throws. An accepted event is deep-frozen
 * (metadata and tool call arguments included).
 */
export function decodeTurnEvent(input: string | Uint8Array): DecodeResult {
  let text: string;
  if (typeof input === "string") {
    text = input;
  } else {
    try {
      text = utf8.decode(input);
    } catch {
      return notJSON();
    }
  }
  const root = parseStrict(text);
  if (root === NOT_JSON) return notJSON();
  const fail = (code: DecoderCode): DecodeResult => {
    const diagnostic: DecoderDiagnostic = { code, message: MESSAGES[code], retryable: false };
    if (isObj(root) && isSafeId(root.eventId) && !hasVariant(root, EVENT_ID)) diagnostic.eventId = root.eventId;
    return { ok: false, diagnostic };
  };
  // A case variant of an envelope field is checked before the version and
  // the event kind, as in Go.
  if (isObj(root) && hasVariant(root, ENVELOPE)) return fail("PROTOCOL_INVALID_PAYLOAD");
  if (isObj(root) && root.protocol === TURN_PROTOCOL && typeof root.version === "number") {
    if (root.version !== TURN_VERSION) return fail("PROTOCOL_UNSUPPORTED_VERSION");
    const e = root.event;
    if (typeof e === "string" && e !== "client.turn.submit" && e !== "server.turn.snapshot" && e !== "server.turn.diagnostic") {
      return fail("PROTOCOL_UNKNOWN_EVENT");
    }
  }
  try {
    const event = deepFreeze(eventFrom(root));
    decoded.add(event);
    return { ok: true, event };
  } catch (e) {
    if (e === invalid) return fail("PROTOCOL_INVALID_PAYLOAD");
    throw e;
  }
}

function notJSON(): DecodeResult {
  return { ok: false, diagnostic: { code: "PROTOCOL_INVALID_PAYLOAD", message: MESSAGE_NOT_JSON, retryable: false } };
}

function str(o: Obj, k: string): string {
  const v = o[k];
  need(has(o, k) && typeof v === "string");
  return v;
}

function optStr(o: Obj, k: string): string | undefined {
  if (!has(o, k)) return undefined;
  const v = o[k];
  need(typeof v === "string");
  return v;
}

function safeId(o: Obj, k: string): string {
  const v = str(o, k);
  need(isSafeId(v));
  return v;
}

function int(o: Obj, k: string): number {
  const v = o[k];
  need(has(o, k) && typeof v === "number" && Number.isInteger(v) && v >= 0 && v <= MAX_SAFE_INTEGER);
  return v === 0 ? 0 : v; // -0 reads as 0
}

function eventFrom(root: JSONValue): TurnEvent {
  need(isObj(root) && root.protocol === TURN_PROTOCOL && root.version === TURN_VERSION);
  const eventId = safeId(root, "eventId");
  const sessionId = safeId(root, "sessionId");
  const turnId = safeId(root, "turnId");
  const sequence = int(root, "sequence");
  const emittedAt = str(root, "emittedAt");
  need(isDateTime(emittedAt));
  const payload = root.payload;
  need(has(root, "payload") && isObj(payload));
  const head = { protocol: TURN_PROTOCOL, version: TURN_VERSION, eventId, sessionId, turnId, sequence, emittedAt } as const;
  switch (root.event) {
    case "client.turn.submit": {
      need(!hasVariant(payload, SUBMIT));
      const input = str(payload, "input");
      need(input.trim() !== "");
      const p: SubmitEvent["payload"] = { input };
      if (has(payload, "lineage")) p.lineage = lineageFrom(payload.lineage);
      if (has(payload, "confirmation")) {
        p.confirmation = confirmationFrom(payload.confirmation);
        need(p.lineage === undefined || p.lineage.operation === "submit"); // a decision continues a turn; it replaces none
      }
      if (has(payload, "attachments")) p.attachments = attachmentIDs(payload.attachments);
      return { ...head, event: "client.turn.submit", payload: p };
    }
    case "server.turn.snapshot":
      return { ...head, event: "server.turn.snapshot", payload: snapshotFrom(payload) };
    case "server.turn.diagnostic":
      return { ...head, event: "server.turn.diagnostic", payload: diagnosticFrom(payload) };
  }
  throw invalid;
}

function lineageFrom(l: JSONValue): Lineage {
  need(isObj(l) && !hasVariant(l, LINEAGE));
  const op = str(l, "operation");
  if (op === "submit") return { operation: "submit" };
  need(op === "retry" || op === "edit" || op === "regenerate");
  return { operation: op, parentTurnId: safeId(l, "parentTurnId"), sourceMessageId: safeId(l, "sourceMessageId") };
}

/**
 * isAttachmentIDs reports whether v is a submit's attachments: an array of
 * 1..MAX_SUBMIT_ATTACHMENTS distinct SafeIds (Go's attachmentIDs).
 */
export function isAttachmentIDs(v: unknown): v is string[] {
  return Array.isArray(v) && v.length >= 1 && v.length <= MAX_SUBMIT_ATTACHMENTS && v.every(isSafeId) && new Set(v).size === v.length;
}

function attachmentIDs(a: JSONValue): string[] {
  need(isAttachmentIDs(a));
  return [...a];
}

function confirmationFrom(c: JSONValue): SubmitConfirmation {
  need(isObj(c) && !hasVariant(c, CONFIRMATION));
  const token = safeId(c, "token");
  const decision = str(c, "decision");
  need(decision === "approve" || decision === "deny");
  return { token, decision };
}

/**
 * decodeDiagnostic validates an already parsed TurnDiagnostic (an HTTP
 * error body's "error" member); undefined when it is not one.
 */
export function decodeDiagnostic(v: JSONValue): TurnDiagnostic | undefined {
  try {
    return diagnosticFrom(v);
  } catch (e) {
    if (e === invalid) return undefined;
    throw e;
  }
}

function diagnosticFrom(d: JSONValue): TurnDiagnostic {
  need(isObj(d) && !hasVariant(d, DIAGNOSTIC) && d.version === 1);
  const code = str(d, "code");
  const message = str(d, "message");
  need(/^[A-Z][A-Z0-9_]*$/.test(code) && message !== "" && typeof d.retryable === "boolean");
  return { version: 1, code, message, retryable: d.retryable };
}

function snapshotFrom(p: Obj): SnapshotPayload {
  need(!hasVariant(p, SNAPSHOT) && has(p, "messages"));
  const messages = messagesFrom(p.messages);
  const status = str(p, "status");
  need(status === "idle" || status === "streaming" || status === "complete" || status === "error");
  const u = p.usage;
  need(has(p, "usage") && isObj(u) && !hasVariant(u, USAGE));
  const out: SnapshotPayload = {
    messages,
    status,
    usage: { promptTokens: int(u, "promptTokens"), completionTokens: int(u, "completionTokens"), totalTokens: int(u, "totalTokens") },
  };
  if (has(p, "error")) out.error = diagnosticFrom(p.error);
  if (has(p, "lineage")) out.lineage = lineageFrom(p.lineage);
  return out;
}

/**
 * decodeMessages validates an already parsed array of canonical message
 * records (a history page's messages) with the snapshot rules, dropping
 * unknown keys; it returns undefined when any record is invalid.
 */
export function decodeMessages(v: JSONValue): Message[] | undefined {
  try {
    return messagesFrom(v);
  } catch (e) {
    if (e === invalid) return undefined;
    throw e;
  }
}

function messagesFrom(v: JSONValue | undefined): Message[] {
  need(Array.isArray(v) && v.length <= MAX_RECORD_ITEMS);
  const lim = { nodes: 3 }; // the record object, its version and the array
  for (const m of v) walk(m, 2, lim);
  return v.map(messageFrom);
}

// walk checks the whole-record limits below one value found at depth.
function walk(v: JSONValue, depth: number, lim: { nodes: number }): void {
  need(++lim.nodes <= MAX_RECORD_NODES && depth <= MAX_RECORD_DEPTH);
  if (typeof v === "number") {
    need(Number.isFinite(v));
  } else if (Array.isArray(v)) {
    need(v.length <= MAX_RECORD_ITEMS);
    for (const x of v) walk(x, depth + 1, lim);
  } else if (isObj(v)) {
    const keys = Object.keys(v);
    need(keys.length <= MAX_RECORD_ITEMS);
    for (const k of keys) {
      need(k.length <= MAX_RECORD_KEY);
      walk(v[k], depth + 1, lim);
    }
  }
}

function messageFrom(v: JSONValue): Message {
  need(isObj(v) && !hasVariant(v, MESSAGE));
  const id = str(v, "id");
  const content = str(v, "content");
  const role = str(v, "role");
  const status = str(v, "status");
  const createdAt = str(v, "createdAt");
  const toolCallId = optStr(v, "toolCallId");
  need(id !== "" && (role === "user" || role === "assistant" || role === "system" || role === "tool"));
  need(status === "pending" || status === "streaming" || status === "complete" || status === "error");
  need(isCreatedAt(createdAt));
  const m: Message = { id, role, content, status, createdAt };
  if (has(v, "parts")) {
    const parts = v.parts;
    need(Array.isArray(parts));
    m.parts = parts.map(partFrom);
  }
  if (has(v, "toolCalls")) {
    const calls = v.toolCalls;
    need(Array.isArray(calls));
    m.toolCalls = calls.map(toolCallFrom);
  }
  if (toolCallId !== undefined) m.toolCallId = toolCallId;
  if (has(v, "metadata")) {
    const md = v.metadata;
    need(isObj(md));
    m.metadata = md;
  }
  return m;
}

function partFrom(v: JSONValue): Part {
  need(isObj(v) && !hasVariant(v, PART));
  const type = str(v, "type");
  if (type === "text") return { type, text: str(v, "text") };
  need(type === "image" || type === "audio" || type === "video" || type === "file");
  const source = str(v, "source");
  const mimeType = optStr(v, "mimeType");
  const base = mimeType === undefined ? { source } : { source, mimeType };
  switch (type) {
    case "image": {
      const detail = optStr(v, "detail");
      if (detail === undefined) return { type, ...base };
      need(detail === "low" || detail === "high" || detail === "auto");
      return { type, ...base, detail };
    }
    case "audio":
    case "video": {
      if (!has(v, "durationSec")) return { type, ...base };
      const d = v.durationSec;
      need(typeof d === "number" && Number.isFinite(d) && d >= 0);
      return { type, ...base, durationSec: d === 0 ? 0 : d };
    }
    default: {
      const filename = optStr(v, "filename");
      return filename === undefined ? { type, ...base } : { type, ...base, filename };
    }
  }
}

function toolCallFrom(v: JSONValue): ToolCall {
  need(isObj(v) && !hasVariant(v, TOOL_CALL));
  const id = str(v, "id");
  const name = str(v, "name");
  const status = str(v, "status");
  const result = optStr(v, "result");
  const error = optStr(v, "error");
  const args = v.args;
  need(has(v, "args") && isObj(args) && id !== "" && name !== "");
  need(status === "pending" || status === "running" || status === "complete" || status === "error" || status === "requires_confirmation");
  const c: ToolCall = { id, name, args, status };
  if (result !== undefined) c.result = result;
  if (error !== undefined) c.error = error;
  return c;
}

// Dates.

function daysIn(year: number, month: number): number {
  if (month === 2) return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

function validDate(y: string, mo: string, d: string): boolean {
  const year = +y, month = +mo, day = +d;
  return month >= 1 && month <= 12 && day >= 1 && day <= daysIn(year, month);
}

const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?(?:Z|[+-](\d{2}):(\d{2}))$/;
const CREATED_AT = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\.\d{3}Z$/;

/** isDateTime: the emittedAt grammar (real date, HH:MM[:SS[.f+]], Z or ±HH:MM). */
export function isDateTime(s: string): boolean {
  const m = DATE_TIME.exec(s);
  if (!m || !validDate(m[1], m[2], m[3]) || +m[4] > 23 || +m[5] > 59) return false;
  if (m[6] !== undefined && +m[6] > 59) return false;
  return m[7] === undefined || (+m[7] <= 23 && +m[8] <= 59);
}

/** isCreatedAt: exactly YYYY-MM-DDTHH:MM:SS.mmmZ naming a real instant. */
export function isCreatedAt(s: string): boolean {
  const m = CREATED_AT.exec(s);
  return !!m && validDate(m[1], m[2], m[3]) && +m[4] <= 23 && +m[5] <= 59 && +m[6] <= 59;
}
