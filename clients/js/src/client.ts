import { decodeAppend, decodePartialAppend, isAppendLine } from "./compact.js";
import { SnapshotCursor } from "./cursor.js";
import {
  ConfirmationError,
  HTTPError,
  isConfirmationCode,
  isMultitaskCode,
  MultitaskError,
  StreamDiagnosticError,
  StreamIncompleteError,
  TurnstreamError,
} from "./errors.js";
import { NOT_JSON, parseStrict, type JSONValue } from "./json.js";
import { LineSplitter } from "./ndjson.js";
import {
  decodeDiagnostic,
  decodeMessages,
  decodeTurnEvent,
  isAttachmentIDs,
  isSafeId,
  TURN_PROTOCOL,
  type Decision,
  type DecoderDiagnostic,
  type Lineage,
  type Message,
  type SnapshotEvent,
  type SubmitConfirmation,
  type SubmitPayload,
  type TurnDiagnostic,
  type Usage,
} from "./protocol.js";
import {
  EXTENSION_RESUME,
  METADATA_PENDING_CONFIRMATIONS,
  METADATA_REASONING,
  MULTITASK_HEADER,
  MULTITASK_POLICIES,
  MULTITASK_REJECT,
  QUEUED_STATUS,
  SNAPSHOT_SCOPE_HEADER,
  STREAM_MODE_COMPACT,
  STREAM_MODE_HEADER,
  type Capabilities,
  type Feedback,
  type MultitaskPolicy,
  type SessionList,
  type SessionListItem,
  type PendingConfirmation,
  type PendingInteraction,
  type Queued,
  type QueuedTurn,
  type SessionSummary,
  type Siblings,
  type StopAnswer,
} from "./wire.js";

type Fetch = typeof globalThis.fetch;

/** Headers sent with every request, or a function giving them (e.g. a fresh token). */
export type HeaderSource = Record<string, string> | (() => Record<string, string> | Promise<Record<string, string>>);

export interface ClientOptions {
  /** The turn function's base URL, e.g. "https://…lambda-url…/" or "/turn/". */
  turnURL: string;
  /** The history function's base URL, e.g. "/history/". */
  historyURL?: string;
  /**
   * The artifacts function's base URL, e.g. "/artifacts/": attachments'
   * uploads and downloads (uploadAttachment, attachmentDownload).
   */
  artifactsURL?: string;
  /** Extra headers (Authorization) for every request. */
  headers?: HeaderSource;
  /** The fetch to use; globalThis.fetch by default. */
  fetch?: Fetch;
  /**
   * Resume a dropped stream from the last accepted sequence: "auto" (the
   * default) when GET /capabilities lists the "resume" extension, "off"
   * never. A resumed stream feeds the same cursor, so no snapshot is
   * applied twice.
   */
  resume?: "auto" | "off";
  /** Resume attempts per turn (default 3), with 250 ms doubling pauses. */
  maxResumes?: number;
  /**
   * Ask for the compact stream (docs/compact.md) on every submit and
   * resume: complete snapshots at the start, at changes other than
   * appended text and at the end, append lines between them. A Turn then
   * also yields provisional snapshots while an append line is arriving
   * (the held sequence, the text so far). Off by default; a server without
   * the extension answers with complete snapshots, read as usual.
   */
  compact?: boolean;
  /**
   * Maps the storage's URLs before they are used: an upload form's
   * (uploadAttachment) and a signed download's (attachmentDownload). A
   * page served behind a CDN that routes the attachments' storage under
   * the page's own origin (docs/chat-page.md: the stack's /uploads/) maps
   * the storage's absolute URLs there. The identity by default.
   */
  storageURL?: (url: string) => string;
}

export interface SubmitOptions {
  sessionId: string;
  input: string;
  /**
   * What a busy session does with this submit (MultitaskPolicy); absent,
   * the session's definition decides (reject unless configured). With
   * "enqueue" a busy session answers 202: onQueued is called, Turn.queued
   * is set, and the Turn follows the queued turn from its start.
   */
  multitask?: MultitaskPolicy;
  /** Called once when the server queued the turn (multitask "enqueue"), before it runs. */
  onQueued?: (queued: Queued) => void;
  /** A SafeId; a random one by default. Reusing it retries the same turn idempotently. */
  turnId?: string;
  /** retry / edit / regenerate an earlier turn (a turnstream extension). */
  lineage?: Lineage;
  /**
   * Files uploaded to the session that go with this turn (a turnstream
   * extension, docs/attachments.md): 1..25 distinct attachment ids from
   * uploadAttachment; empty or absent sends none. Each becomes a part of
   * the user message ({type: "image" | "file", source:
   * "attachment:<id>", ...}). A refused one fails the submit with an
   * HTTPError: ATTACHMENT_NOT_FOUND (404), ATTACHMENT_EXPIRED (410),
   * ATTACHMENT_INVALID (400: bytes of another type, too many, or used by
   * another turn); nothing is stored then.
   */
  attachments?: readonly string[];
  /**
   * A decision on a tool call waiting for approval (a turnstream
   * extension; see decide). It cannot be combined with a retry, edit or
   * regenerate lineage.
   */
  confirmation?: SubmitConfirmation;
  /** "turn" limits snapshots to this turn's messages (page older ones from history). */
  scope?: "session" | "turn";
  /** Overrides ClientOptions.compact for this turn. */
  compact?: boolean;
  signal?: AbortSignal;
  /** Called for each line that is not a valid turn event; the line is skipped. */
  onInvalidLine?: (diagnostic: DecoderDiagnostic) => void;
}

/** DecideOptions name a waiting tool call's confirmation and the decision on it. */
export interface DecideOptions {
  sessionId: string;
  /** The confirmation's token: PendingConfirmation.token or PendingInteraction.interactionId. */
  token: string;
  decision: Decision;
  /**
   * The continuation's user message, a label only (it never decides):
   * "Approved." or "Denied." by default. Must not be blank.
   */
  label?: string;
  /** As in SubmitOptions: a new turn id, random by default. */
  turnId?: string;
  scope?: "session" | "turn";
  signal?: AbortSignal;
  onInvalidLine?: (diagnostic: DecoderDiagnostic) => void;
}

/** ResumeOptions name a running turn to read from where a reader left it. */
export interface ResumeOptions {
  sessionId: string;
  turnId: string;
  /**
   * The last sequence already shown (a history summary's
   * currentTurn.sequence, or Turn.sequence); omitted, the stream starts
   * with the turn's newest state.
   */
  after?: number;
  /** As in SubmitOptions. */
  scope?: "session" | "turn";
  compact?: boolean;
  /**
   * The turn is queued (a history summary's queuedTurns): its stream stays
   * silent until it starts, however many times the server ends the wait.
   */
  queued?: boolean;
  signal?: AbortSignal;
  onInvalidLine?: (diagnostic: DecoderDiagnostic) => void;
}

export interface ArtifactReference {
  /** A relative path inside the workspace, e.g. "notes/groceries.md". */
  entryPath: string;
  artifactType: "document" | "webpage" | "presentation" | "spreadsheet" | "image";
}

/** TurnSummary is one saved turn of a history page. */
export interface TurnSummary {
  turnId: string;
  ordinal: number;
  /** running: a turn still being written, as of its last checkpoint (its messages so far). */
  status: "running" | "complete" | "error" | "interrupted";
  lineage: Lineage;
  /** Canonical message records, the user message first. */
  messages: Message[];
  artifacts: ArtifactReference[];
  error: TurnDiagnostic | null;
  usage: Usage;
  startedAt: string;
  completedAt: string | null;
  /** The owner's rating of the answer; null (or absent, from an older server) when none. */
  feedback?: Feedback | null;
  /** The versions of this answer (docs/branches.md); absent when it has no other. */
  siblings?: Siblings;
  /** true on a turn read by id (readTurn) that is not on the active branch. */
  superseded?: boolean;
}

/** A history page; nextCursor is null exactly when hasMore is false. */
export interface Page<T> {
  items: T[];
  nextCursor: string | null;
  hasMore: boolean;
}

export interface PageOptions {
  /** 1-100, default 20. */
  limit?: number;
  /** The page cursor of the previous page. */
  cursor?: string;
  /** "desc" (newest first, the default) or "asc". */
  order?: "desc" | "asc";
  signal?: AbortSignal;
}

/** newId returns a random SafeId (a UUID where the platform offers one). */
export function newId(): string {
  const c = globalThis.crypto;
  if (typeof c.randomUUID === "function") return c.randomUUID();
  const b = c.getRandomValues(new Uint8Array(16));
  return Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}

const slash = (u: string): string => (u.endsWith("/") ? u : u + "/");

// How many requests deleteSession sends at most before it gives up (each
// 202 answer is one more part of the session deleted).
const DELETE_MAX_CALLS = 100;

/**
 * TurnstreamClient speaks the turn protocol to one deployment: submit and
 * stop turns, read capabilities and page history. It holds no per-turn
 * state; each submit returns its own Turn.
 */
export class TurnstreamClient {
  readonly turnURL: string;
  readonly historyURL: string | undefined;
  readonly artifactsURL: string | undefined;
  /** ClientOptions.storageURL, or the identity. */
  readonly storageURL: (url: string) => string;
  readonly #opts: ClientOptions;
  #capabilities: Promise<Capabilities> | undefined;

  constructor(opts: ClientOptions) {
    this.#opts = opts;
    this.turnURL = slash(opts.turnURL);
    this.historyURL = opts.historyURL === undefined ? undefined : slash(opts.historyURL);
    this.artifactsURL = opts.artifactsURL === undefined ? undefined : slash(opts.artifactsURL);
    this.storageURL = opts.storageURL ?? ((url) => url);
  }

  /**
   * submit starts a turn. Iterate the returned Turn to receive each
   * accepted snapshot (complete, never a delta) until the terminal one.
   * Nothing is sent until iteration starts.
   * A refused policy throws a MultitaskError from the iteration
   * (SESSION_QUEUE_FULL, retryable; MULTITASK_NOT_ALLOWED).
   * @throws TypeError for a sessionId or turnId that is not a SafeId, a
   * multitask that is not a MultitaskPolicy, or attachments that are not
   * up to 25 distinct SafeIds.
   */
  submit(opts: SubmitOptions): Turn {
    const turnId = opts.turnId ?? newId();
    if (!isSafeId(opts.sessionId) || !isSafeId(turnId)) throw new TypeError("turnstream: session and turn ids must be SafeIds");
    if (opts.multitask !== undefined && !MULTITASK_POLICIES.includes(opts.multitask)) {
      throw new TypeError("turnstream: multitask must be reject, enqueue, interrupt or rollback");
    }
    if (opts.attachments?.length && !isAttachmentIDs(opts.attachments)) {
      throw new TypeError("turnstream: attachments must be 1-25 distinct SafeIds");
    }
    const c = opts.confirmation;
    if (c !== undefined) {
      if (!isSafeId(c.token) || (c.decision !== "approve" && c.decision !== "deny")) {
        throw new TypeError("turnstream: a confirmation needs a SafeId token and the decision approve or deny");
      }
      if (opts.lineage && opts.lineage.operation !== "submit") throw new TypeError("turnstream: a decision cannot retry, edit or regenerate");
    }
    return new Turn(this, { ...opts, turnId });
  }

  /**
   * decide sends the decision on a tool call waiting for approval: a new
   * turn whose submit payload carries confirmation {token, decision}. Its
   * Turn streams the continuation: on approve the tool's call first
   * (running, then complete or error with its result), on deny the call
   * as error "The user denied this tool call.", then the model's answer.
   * A refused decision throws a ConfirmationError from the iteration:
   * CONFIRMATION_NOT_FOUND, CONFIRMATION_DECIDED, CONFIRMATION_EXPIRED.
   * @throws TypeError for ids or a token that are not SafeIds, another
   * decision or a blank label.
   */
  decide(opts: DecideOptions): Turn {
    const { token, decision, label, ...rest } = opts;
    const input = label ?? (decision === "approve" ? "Approved." : "Denied.");
    if (input.trim() === "") throw new TypeError("turnstream: a decision's label must not be blank");
    return this.submit({ ...rest, input, confirmation: { token, decision } });
  }

  /**
   * resume reads a turn that is already running, e.g. after a page reload
   * mid-answer: GET {turnURL}sessions/{sessionId}/turns/{turnId}/stream
   * ?after=<after>, which needs the "resume" extension (capabilities). The
   * returned Turn yields the snapshots newer than after, until the
   * terminal one, and resumes again if that stream breaks off. Reading it
   * never runs the turn, and leaving it never stops it (stop() does).
   * @throws TypeError for ids that are not SafeIds or an after that is not
   * an integer >= 0.
   */
  resume(opts: ResumeOptions): Turn {
    if (!isSafeId(opts.sessionId) || !isSafeId(opts.turnId)) throw new TypeError("turnstream: session and turn ids must be SafeIds");
    if (opts.after !== undefined && !(Number.isSafeInteger(opts.after) && opts.after >= 0)) {
      throw new TypeError("turnstream: after must be an integer >= 0");
    }
    return new Turn(this, { ...opts, input: "", attach: true });
  }

  /**
   * stop asks the running turn to end; its stream then ends with a
   * terminal snapshot (status error, code TURN_INTERRUPTED). A queued turn
   * that has not started is cancelled instead (cancelled: true): it never
   * runs, and its stream ends with a TURN_CANCELLED diagnostic.
   * @throws HTTPError (e.g. TURN_NOT_ACTIVE when it already ended).
   */
  async stop(sessionId: string, turnId: string, signal?: AbortSignal): Promise<StopAnswer> {
    const res = await this.request(this.turnURL + "stop", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ sessionId, turnId }),
      signal,
    });
    let v: JSONValue | typeof NOT_JSON = NOT_JSON;
    try {
      v = parseStrict(await res.text());
    } catch (e) {
      throwIfAborted(signal, e);
    }
    return { stopRequested: true, cancelled: isObj(v) && v.cancelled === true };
  }

  /**
   * multitaskPolicies returns the policies this deployment serves
   * (capabilities.multitask): at least ["reject"], also when capabilities
   * cannot be read.
   */
  async multitaskPolicies(signal?: AbortSignal): Promise<MultitaskPolicy[]> {
    try {
      const m = (await this.capabilities(signal)).multitask;
      if (m?.available === true && Array.isArray(m.policies)) {
        return MULTITASK_POLICIES.filter((p) => p === MULTITASK_REJECT || m.policies.includes(p));
      }
    } catch (e) {
      throwIfAborted(signal, e);
    }
    return [MULTITASK_REJECT];
  }

  /** capabilities returns GET {turnURL}capabilities, fetched once per client. */
  capabilities(signal?: AbortSignal): Promise<Capabilities> {
    if (!this.#capabilities) {
      this.#capabilities = this.getJSON(this.turnURL + "capabilities", signal).then((v) => {
        if (!isObj(v) || !Array.isArray(v.extensions) || !Array.isArray(v.protocols)) throw invalidResponse();
        return v as unknown as Capabilities;
      });
      this.#capabilities.catch(() => (this.#capabilities = undefined));
    }
    return this.#capabilities;
  }

  /** session returns GET {historyURL}sessions/{id}. */
  async session(sessionId: string, signal?: AbortSignal): Promise<SessionSummary> {
    const v = await this.getJSON(this.#history(sessionId, ""), signal);
    if (!isObj(v) || v.sessionId !== sessionId) throw invalidResponse();
    const pending = v.pendingInteractions ?? [];
    if (!Array.isArray(pending)) throw invalidResponse();
    // Interactions of other kinds, or malformed ones, are left out.
    const approvals = pending.filter(isPendingInteraction) as unknown as PendingInteraction[];
    const queue = v.queuedTurns ?? [];
    if (!Array.isArray(queue)) throw invalidResponse();
    const queuedTurns = queue.filter(isQueuedSummary) as unknown as QueuedTurn[];
    return { ...(v as unknown as SessionSummary), pendingInteractions: approvals, queuedTurns };
  }

  /** turns returns one page of GET {historyURL}sessions/{id}/turns. */
  async turns(sessionId: string, opts: PageOptions = {}): Promise<Page<TurnSummary>> {
    const v = await this.getJSON(this.#history(sessionId, "/turns", opts), opts.signal);
    if (!isObj(v) || !Array.isArray(v.turns) || !isPage(v)) throw invalidResponse();
    const turns = v.turns;
    const items = turns.map((t) => {
      const messages = isObj(t) ? decodeMessages(t.messages ?? null) : undefined;
      if (!isObj(t) || !isSafeId(t.turnId) || !messages || !Array.isArray(t.artifacts)) throw invalidResponse();
      return { ...(t as unknown as TurnSummary), messages };
    });
    return { items, nextCursor: v.nextCursor as string | null, hasMore: v.hasMore as boolean };
  }

  /** messages returns one page of GET {historyURL}sessions/{id}/messages. */
  async messages(sessionId: string, opts: PageOptions = {}): Promise<Page<Message>> {
    const v = await this.getJSON(this.#history(sessionId, "/messages", opts), opts.signal);
    if (!isObj(v) || !isPage(v)) throw invalidResponse();
    const items = decodeMessages(v.messages ?? null);
    if (!items) throw invalidResponse();
    return { items, nextCursor: v.nextCursor as string | null, hasMore: v.hasMore as boolean };
  }

  /**
   * sessions returns one page of GET {historyURL}sessions: the caller's
   * sessions, most recently active first (docs/conversations.md). q keeps
   * those whose title holds each of its words.
   */
  async sessions(opts: { limit?: number; cursor?: string; q?: string; signal?: AbortSignal } = {}): Promise<SessionList> {
    if (this.historyURL === undefined) throw new TypeError("turnstream: no historyURL configured");
    const q = new URLSearchParams();
    if (opts.limit !== undefined) q.set("limit", String(opts.limit));
    if (opts.cursor !== undefined) q.set("cursor", opts.cursor);
    if (opts.q !== undefined && opts.q !== "") q.set("q", opts.q);
    const qs = q.toString();
    const v = await this.getJSON(`${this.historyURL}sessions${qs ? "?" + qs : ""}`, opts.signal);
    if (!isObj(v) || !Array.isArray(v.sessions) || !(v.nextCursor === null || typeof v.nextCursor === "string")) throw invalidResponse();
    if (!v.sessions.every((s) => isObj(s) && isSafeId(s.sessionId))) throw invalidResponse();
    return v as unknown as SessionList;
  }

  /** renameSession sets a session's title (PATCH {historyURL}sessions/{id}) and returns it as listed. */
  async renameSession(sessionId: string, title: string, signal?: AbortSignal): Promise<SessionListItem> {
    const res = await this.request(this.#history(sessionId, ""), {
      method: "PATCH",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ title }),
      signal,
    });
    const v = parseStrict(await res.text());
    if (!isObj(v) || v.sessionId !== sessionId) throw invalidResponse();
    return v as unknown as SessionListItem;
  }

  /**
   * deleteSession deletes a session with its turns (DELETE
   * {historyURL}sessions/{id}). The server removes a long session a part
   * at a time, answering 202 {"status":"deleting"} while some is left;
   * deleteSession asks again until it answers 204, at most 100 requests
   * (then a retryable RESPONSE_INVALID: calling it again goes on). A 404
   * SESSION_NOT_FOUND resolves too: nothing of that id is the caller's,
   * e.g. another window deleted it first.
   * @throws HTTPError SESSION_BUSY (409, retryable) while a turn runs in
   * the session; nothing more is deleted then.
   */
  async deleteSession(sessionId: string, signal?: AbortSignal): Promise<void> {
    const url = this.#history(sessionId, "");
    for (let calls = 0; calls < DELETE_MAX_CALLS; calls++) {
      let res: Response;
      try {
        res = await this.request(url, { method: "DELETE", signal });
      } catch (e) {
        if (e instanceof HTTPError && e.status === 404 && e.code === "SESSION_NOT_FOUND") return;
        throw e;
      }
      let text: string;
      try {
        text = await res.text();
      } catch (e) {
        throw networkFailure(e, signal);
      }
      if (res.status === 204) return;
      const v = text.length > 4096 ? NOT_JSON : parseStrict(text);
      if (res.status !== 202 || !isObj(v) || v.status !== "deleting") throw invalidResponse();
    }
    throw new TurnstreamError("RESPONSE_INVALID", "The session is still being deleted; ask again to go on.", true);
  }

  /**
   * setFeedback rates a turn's answer (PUT {historyURL}sessions/{id}/turns/{turnId}/feedback),
   * replacing an earlier rating, and returns it as stored; null removes it (DELETE).
   */
  async setFeedback(
    sessionId: string,
    turnId: string,
    feedback: { rating: "up" | "down"; comment?: string } | null,
    signal?: AbortSignal,
  ): Promise<Feedback | null> {
    if (!isSafeId(turnId)) throw new TypeError("turnstream: turn id is not a SafeId");
    const url = this.#history(sessionId, `/turns/${turnId}/feedback`);
    if (feedback === null) {
      await this.request(url, { method: "DELETE", signal });
      return null;
    }
    const body: { rating: string; comment?: string } = { rating: feedback.rating };
    if (feedback.comment !== undefined) body.comment = feedback.comment;
    const res = await this.request(url, { method: "PUT", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body), signal });
    const v = parseStrict(await res.text());
    if (!isObj(v) || (v.rating !== "up" && v.rating !== "down")) throw invalidResponse();
    return v as unknown as Feedback;
  }

  /** pages walks every page of turns or messages, following the page cursors. */
  async *pages<K extends "turns" | "messages">(
    kind: K,
    sessionId: string,
    opts: PageOptions = {},
  ): AsyncGenerator<Page<K extends "turns" ? TurnSummary : Message>> {
    let cursor = opts.cursor;
    for (;;) {
      const page = await (kind === "turns" ? this.turns(sessionId, { ...opts, cursor }) : this.messages(sessionId, { ...opts, cursor }));
      yield page as Page<K extends "turns" ? TurnSummary : Message>;
      if (!page.hasMore || page.nextCursor === null) return;
      cursor = page.nextCursor;
    }
  }

  #history(sessionId: string, tail: string, opts: PageOptions = {}): string {
    if (this.historyURL === undefined) throw new TypeError("turnstream: no historyURL configured");
    if (!isSafeId(sessionId)) throw new TypeError("turnstream: session id is not a SafeId");
    const q = new URLSearchParams();
    if (opts.limit !== undefined) q.set("limit", String(opts.limit));
    if (opts.cursor !== undefined) q.set("cursor", opts.cursor);
    if (opts.order !== undefined) q.set("order", opts.order);
    const qs = q.toString();
    return `${this.historyURL}sessions/${sessionId}${tail}${qs ? "?" + qs : ""}`;
  }

  /** @internal getJSON fetches url and parses its body with the strict reader. */
  async getJSON(url: string, signal?: AbortSignal): Promise<JSONValue> {
    const res = await this.request(url, { method: "GET", signal });
    let text: string;
    try {
      text = await res.text();
    } catch (e) {
      throw networkFailure(e, signal);
    }
    const v = parseStrict(text);
    if (v === NOT_JSON) throw invalidResponse();
    return v;
  }

  /**
   * @internal request sends one request with the configured headers and
   * turns a non-2xx answer into an HTTPError.
   */
  async request(url: string, init: RequestInit & { headers?: Record<string, string> }): Promise<Response> {
    const h = this.#opts.headers;
    const extra = typeof h === "function" ? await h() : h;
    const f = this.#opts.fetch ?? globalThis.fetch.bind(globalThis);
    let res: Response;
    try {
      res = await f(url, { ...init, headers: { ...extra, ...init.headers }, cache: "no-store" });
    } catch (e) {
      throw networkFailure(e, init.signal ?? undefined);
    }
    if (!res.ok) {
      let diagnostic: TurnDiagnostic | undefined;
      try {
        const v = parseStrict(await res.text());
        if (isObj(v) && isObj(v.error)) diagnostic = decodeDiagnostic(v.error);
      } catch (e) {
        throwIfAborted(init.signal ?? undefined, e);
      }
      if (diagnostic && isConfirmationCode(diagnostic.code)) {
        throw new ConfirmationError(res.status, { ...diagnostic, code: diagnostic.code });
      }
      if (diagnostic && isMultitaskCode(diagnostic.code)) {
        throw new MultitaskError(res.status, { ...diagnostic, code: diagnostic.code });
      }
      throw new HTTPError(res.status, diagnostic);
    }
    return res;
  }

  /**
   * canResume reports whether this deployment serves the resume route
   * (capabilities list "resume" as available); false when capabilities
   * cannot be read.
   */
  async canResume(signal?: AbortSignal): Promise<boolean> {
    try {
      const c = await this.capabilities(signal);
      return c.extensions.includes(EXTENSION_RESUME) && c.resume?.available !== false;
    } catch (e) {
      throwIfAborted(signal, e);
      return false;
    }
  }

  /** @internal resumeEnabled reports whether a dropped stream may be resumed automatically. */
  async resumeEnabled(signal?: AbortSignal): Promise<boolean> {
    return this.#opts.resume !== "off" && (await this.canResume(signal));
  }

  /** @internal */
  get maxResumes(): number {
    return this.#opts.maxResumes ?? 3;
  }

  /** @internal */
  get compact(): boolean {
    return this.#opts.compact === true;
  }
}

interface TurnOptions extends SubmitOptions {
  turnId: string;
  /** Read a running turn (resume) instead of submitting one. */
  attach?: boolean;
  /** With attach: the last sequence the reader already has. */
  after?: number;
  /** With attach: the turn is queued (ResumeOptions.queued). */
  queued?: boolean;
}

/**
 * Turn is one submitted turn: an async iterable of the snapshots its
 * stream delivers that the turn's SnapshotCursor accepts, ending after the
 * terminal snapshot (status complete or error; a stopped turn ends with
 * error TURN_INTERRUPTED). Iteration throws StreamDiagnosticError for a
 * diagnostic line, HTTPError when the submit is refused,
 * StreamIncompleteError when the stream ends early and cannot be resumed,
 * and the signal's reason when aborted. Iterate it once. Leaving the loop
 * early (break, abort) only stops reading: the turn runs on at the server
 * until it ends or stop() is called.
 */
export class Turn implements AsyncIterable<SnapshotEvent> {
  readonly sessionId: string;
  readonly turnId: string;
  /** The cursor every line of this turn goes through. */
  readonly cursor: SnapshotCursor;
  /**
   * The server's 202 answer when it queued this turn (multitask
   * "enqueue"); undefined for a turn that streamed at once. Set before
   * onQueued is called.
   */
  queued: Queued | undefined;
  /** Lines that failed to decode (skipped). */
  readonly invalidLines: DecoderDiagnostic[] = [];
  readonly #client: TurnstreamClient;
  readonly #opts: TurnOptions;
  #started = false;
  // The last resume stream ended at its deadline without a new snapshot.
  #idleTimeout = false;
  // The last stream was a queued turn's silent wait the server ended.
  #idleWait = false;

  constructor(client: TurnstreamClient, opts: TurnOptions) {
    this.#client = client;
    this.#opts = opts;
    this.sessionId = opts.sessionId;
    this.turnId = opts.turnId;
    this.cursor = new SnapshotCursor(opts.sessionId);
    this.queued = undefined;
  }

  // #waiting: the turn is queued and has not started; its stream may end
  // any number of silent waits, each opened again.
  get #waiting(): boolean {
    return (this.queued !== undefined || this.#opts.queued === true) && this.cursor.sequence === undefined;
  }

  /** The last accepted sequence: where a resume continues after. */
  get sequence(): number | undefined {
    return this.cursor.sequence;
  }

  /** The newest accepted snapshot. */
  get snapshot(): SnapshotEvent | undefined {
    return this.cursor.snapshot;
  }

  get #compact(): boolean {
    return this.#opts.compact ?? this.#client.compact;
  }

  /** stop asks the server to stop this turn, or cancel it while it is queued (see TurnstreamClient.stop). */
  stop(signal?: AbortSignal): Promise<StopAnswer> {
    return this.#client.stop(this.sessionId, this.turnId, signal);
  }

  [Symbol.asyncIterator](): AsyncGenerator<SnapshotEvent> {
    if (this.#started) throw new TypeError("turnstream: a Turn is iterated once");
    this.#started = true;
    return this.#run();
  }

  async *#run(): AsyncGenerator<SnapshotEvent> {
    const { signal } = this.#opts;
    let res: Response | undefined = await (this.#opts.attach ? this.#resume() : this.#submit());
    if (res.status === 202 && !this.#opts.attach) {
      this.queued = await readQueued(res, this.sessionId, this.turnId);
      this.#opts.onQueued?.(this.queued);
      res = await this.#resume();
    }
    let resumed = this.#opts.attach === true || this.queued !== undefined;
    for (let resumes = 0; ; ) {
      const before = this.sequence;
      const ended = yield* this.#read(res, resumed);
      if (ended) return;
      if (this.sequence !== before) resumes = 0; // it got somewhere: a fresh budget
      resumed = true;
      if (this.#idleWait) {
        // The server ended a silent wait of a queued turn: no failure (the
        // queue's TTL bounds the wait; an expired turn ends with its own
        // diagnostic). Open it again.
        this.#idleWait = false;
        await pause(250, signal);
        res = await this.#resume();
        continue;
      }
      if (resumes >= this.#client.maxResumes || !(await this.#client.resumeEnabled(signal))) {
        throw new StreamIncompleteError(this.sequence, this.invalidLines);
      }
      await pause(250 * 2 ** resumes, signal);
      resumes++;
      try {
        res = await this.#resume();
      } catch (e) {
        if (!(e instanceof TurnstreamError) || !e.retryable) throw e;
        res = undefined;
      }
    }
  }

  #submit(): Promise<Response> {
    const o = this.#opts;
    const payload: SubmitPayload = { input: o.input };
    if (o.lineage) payload.lineage = o.lineage;
    if (o.confirmation) payload.confirmation = { token: o.confirmation.token, decision: o.confirmation.decision };
    if (o.attachments?.length) payload.attachments = [...o.attachments];
    const event = {
      protocol: TURN_PROTOCOL,
      version: 1,
      eventId: newId(),
      sessionId: o.sessionId,
      turnId: o.turnId,
      sequence: 0,
      emittedAt: new Date().toISOString(),
      event: "client.turn.submit",
      payload,
    };
    const headers: Record<string, string> = { "Content-Type": "application/json", Accept: "application/x-ndjson" };
    if (o.scope) headers[SNAPSHOT_SCOPE_HEADER] = o.scope;
    if (this.#compact) headers[STREAM_MODE_HEADER] = STREAM_MODE_COMPACT;
    if (o.multitask && !o.confirmation) headers[MULTITASK_HEADER] = o.multitask;
    return this.#client.request(this.#client.turnURL, { method: "POST", headers, body: JSON.stringify(event), signal: o.signal });
  }

  // #resume opens GET {turnURL}sessions/{id}/turns/{turnId}/stream?after=<sequence>:
  // the newest state as one complete snapshot, then newer ones, with the
  // live sequences, so the same cursor takes over.
  #resume(): Promise<Response> {
    const o = this.#opts;
    const seq = this.sequence ?? o.after;
    const after = seq === undefined ? "" : `?after=${seq}`;
    const headers: Record<string, string> = { Accept: "application/x-ndjson" };
    if (o.scope) headers[SNAPSHOT_SCOPE_HEADER] = o.scope;
    if (this.#compact) headers[STREAM_MODE_HEADER] = STREAM_MODE_COMPACT;
    const path = this.queued && this.sequence === undefined ? this.queued.streamUrl : `sessions/${o.sessionId}/turns/${o.turnId}/stream`;
    const url = `${this.#client.turnURL}${path}${after}`;
    return this.#client.request(url, { method: "GET", headers, signal: o.signal });
  }

  // #read feeds one response's lines through the decoder and the cursor,
  // yielding accepted snapshots. It returns true after the terminal line,
  // false when the stream ended or broke off before it (res undefined: a
  // failed resume attempt, to be tried again).
  async *#read(res: Response | undefined, resumed: boolean): AsyncGenerator<SnapshotEvent, boolean> {
    if (res === undefined) return false;
    const signal = this.#opts.signal;
    const type = res.headers.get("content-type") ?? "";
    if (!type.toLowerCase().startsWith("application/x-ndjson") || !res.body) {
      await res.body?.cancel().catch(() => {});
      throw invalidResponse();
    }
    const reader = res.body.getReader();
    const lines = new LineSplitter();
    const first = this.sequence;
    const compact = (res.headers.get(STREAM_MODE_HEADER) ?? "").toLowerCase() === STREAM_MODE_COMPACT;
    let shown = -1; // the content length last yielded provisionally
    let done = false;
    try {
      for (;;) {
        let chunk: ReadableStreamReadResult<Uint8Array>;
        try {
          chunk = await reader.read();
        } catch (e) {
          throwIfAborted(signal, e);
          return false; // the connection broke off: resumable
        }
        const batch = chunk.done ? [lines.flush()].filter((l) => l.length > 0) : lines.push(chunk.value);
        for (const line of batch) {
          if (compact && isAppendLine(line)) {
            const a = decodeAppend(line);
            if (!a) {
              const d: DecoderDiagnostic = { code: "PROTOCOL_INVALID_PAYLOAD", message: "Turn event payload is invalid.", retryable: false };
              this.invalidLines.push(d);
              this.#opts.onInvalidLine?.(d);
              continue;
            }
            const applied = this.cursor.applyAppend(a);
            if (applied === "gap") return false; // resume: it starts with a complete snapshot
            if (applied === "applied") {
              const snap = this.cursor.snapshot!;
              shown = lastContentLength(snap);
              yield snap;
            }
            continue;
          }
          const r = decodeTurnEvent(line);
          if (!r.ok) {
            this.invalidLines.push(r.diagnostic);
            this.#opts.onInvalidLine?.(r.diagnostic);
            continue;
          }
          const ev = r.event;
          if (ev.sessionId !== this.sessionId || ev.turnId !== this.turnId) continue;
          if (ev.event === "server.turn.diagnostic") {
            if (resumed && ev.payload.code === "SERVER_TIMEOUT" && this.#waiting) {
              this.#idleWait = true; // a queued turn still waiting to start
              return false;
            }
            // A resume stream that reaches its own deadline while the turn
            // runs ends with SERVER_TIMEOUT and no terminal snapshot: resume
            // again, unless the previous one ended so too without progress.
            const progressed = this.sequence !== first;
            if (resumed && ev.payload.code === "SERVER_TIMEOUT" && (progressed || !this.#idleTimeout)) {
              this.#idleTimeout = !progressed;
              return false;
            }
            done = true;
            throw new StreamDiagnosticError(ev);
          }
          if (ev.event !== "server.turn.snapshot") continue;
          const terminal = ev.payload.status === "complete" || ev.payload.status === "error";
          // A resumed reader already has the state at or before after; a
          // terminal line it already holds still ends the turn (a resume
          // always ends with one, whatever after).
          if (this.#opts.after !== undefined && ev.sequence <= this.#opts.after) {
            if (terminal) return true;
            continue;
          }
          if (!this.cursor.apply(ev)) {
            if (terminal && this.cursor.sequence !== undefined && ev.sequence <= this.cursor.sequence) return true;
            continue;
          }
          const snap = this.cursor.snapshot!;
          shown = lastContentLength(snap);
          if (snap.payload.status === "complete" || snap.payload.status === "error") done = true;
          yield snap;
          if (done) return true;
        }
        if (chunk.done) return false;
        if (compact && lines.pendingBytes > 0) {
          // An append line is arriving: show its text so far.
          const a = decodePartialAppend(lines.peek());
          const p = a ? this.cursor.provisional(a) : undefined;
          if (p && lastContentLength(p) > shown) {
            shown = lastContentLength(p);
            yield p;
          }
        }
      }
    } finally {
      if (done) {
        // The terminal line came; the server ends the body right after it.
        // Reading that end (in the background) instead of cancelling keeps
        // the browser from logging the request as aborted.
        void drainQuietly(reader);
      } else {
        reader.cancel().catch(() => {}); // frees the connection
      }
    }
  }
}

// drainQuietly reads a body to its end, cancelling it after 64 KiB more
// or 5 s, whichever comes first (a server that keeps the body open);
// errors are nobody's business any more.
async function drainQuietly(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<void> {
  let left = 64 << 10;
  const timer = setTimeout(() => reader.cancel().catch(() => {}), 5000);
  try {
    while (left > 0) {
      const { done, value } = await reader.read();
      if (done) return;
      left -= value.byteLength;
    }
    await reader.cancel();
  } catch {
    /* the stream is over either way */
  } finally {
    clearTimeout(timer);
  }
}

// readQueued reads a 202 answer: the queued turn it names must be this
// one, with a position >= 1 and a stream URL below the turn URL (a
// relative path without dot segments, query or scheme); anything else is
// RESPONSE_INVALID.
async function readQueued(res: Response, sessionId: string, turnId: string): Promise<Queued> {
  let text: string;
  try {
    text = await res.text();
  } catch (e) {
    throw networkFailure(e, undefined);
  }
  const v = text.length > 4096 ? NOT_JSON : parseStrict(text);
  if (
    !isObj(v) ||
    v.sessionId !== sessionId ||
    v.turnId !== turnId ||
    v.status !== QUEUED_STATUS ||
    typeof v.position !== "number" ||
    !Number.isSafeInteger(v.position) ||
    v.position < 1 ||
    !isRelativeRoute(v.streamUrl)
  ) {
    throw invalidResponse();
  }
  return { sessionId, turnId, status: QUEUED_STATUS, position: v.position, streamUrl: v.streamUrl as string };
}

function isRelativeRoute(v: unknown): boolean {
  if (typeof v !== "string" || v === "" || v.startsWith("/") || /[?#\\:]/.test(v)) return false;
  return v.split("/").every((seg) => seg !== "" && seg !== "." && seg !== "..");
}

function lastContentLength(s: SnapshotEvent): number {
  const m = s.payload.messages;
  return m.length === 0 ? 0 : m[m.length - 1]!.content.length;
}

/**
 * pendingConfirmations returns the tool calls an assistant message left
 * waiting for a decision: its metadata.pendingConfirmations, in order,
 * leaving out any entry that is not {token, toolCallId, action, expiresAt}
 * with a SafeId token; [] for a message without them. It is a record of
 * what the turn asked; the history summary's pendingInteractions says
 * which still wait.
 */
export function pendingConfirmations(message: Message): PendingConfirmation[] {
  const list = message.metadata?.[METADATA_PENDING_CONFIRMATIONS];
  if (!Array.isArray(list)) return [];
  const out: PendingConfirmation[] = [];
  for (const c of list) {
    if (isObj(c) && isSafeId(c.token) && typeof c.toolCallId === "string" && typeof c.action === "string" && isEpochMs(c.expiresAt)) {
      out.push({ token: c.token, toolCallId: c.toolCallId, action: c.action, expiresAt: c.expiresAt });
    }
  }
  return out;
}

/**
 * reasoning returns the model's reasoning an assistant message carries (its
 * metadata.reasoning, docs/reasoning.md), "" when it has none: the model
 * did not reason, or its definition keeps reasoning from clients. Untrusted
 * text, like all the server sends.
 */
export function reasoning(message: Message): string {
  const r = message.metadata?.[METADATA_REASONING];
  return typeof r === "string" ? r : "";
}

function isEpochMs(v: unknown): v is number {
  return typeof v === "number" && Number.isSafeInteger(v) && v >= 0;
}

function isPendingInteraction(v: JSONValue): boolean {
  if (!isObj(v) || !isSafeId(v.interactionId) || !isObj(v.data)) return false;
  const d = v.data;
  return typeof d.toolName === "string" && "args" in d && typeof d.toolCallId === "string" && isSafeId(d.turnId) && isEpochMs(d.expiresAt);
}

function isQueuedSummary(v: JSONValue): boolean {
  return (
    isObj(v) &&
    isSafeId(v.turnId) &&
    typeof v.position === "number" &&
    Number.isSafeInteger(v.position) &&
    v.position >= 1 &&
    typeof v.inputPreview === "string" &&
    typeof v.queuedAt === "string" &&
    isEpochMs(v.expiresAt)
  );
}

function isObj(v: unknown): v is { [key: string]: JSONValue } {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function isPage(v: { [key: string]: JSONValue }): boolean {
  return typeof v.hasMore === "boolean" && (v.nextCursor === null || typeof v.nextCursor === "string");
}

function invalidResponse(): TurnstreamError {
  return new TurnstreamError("RESPONSE_INVALID", "The server's answer is not the expected protocol.", false);
}

function throwIfAborted(signal: AbortSignal | undefined, e: unknown): void {
  if (signal?.aborted) throw signal.reason;
  if (e instanceof DOMException && e.name === "AbortError") throw e;
}

function networkFailure(e: unknown, signal: AbortSignal | undefined): unknown {
  throwIfAborted(signal, e);
  if (e instanceof TurnstreamError) return e;
  return new TurnstreamError("NETWORK_FAILED", "The server could not be reached.", true);
}

function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(done, ms);
    function done(): void {
      signal?.removeEventListener("abort", abort);
      resolve();
    }
    function abort(): void {
      clearTimeout(t);
      reject(signal!.reason);
    }
    signal?.addEventListener("abort", abort, { once: true });
  });
}
