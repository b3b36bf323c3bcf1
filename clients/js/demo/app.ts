// The demo chat page the dev server serves at "/": the client from
// ../src driving a plain DOM renderer, answers rendered as Markdown
// (./markdown.ts), files attached to messages (./attach.ts). Same origin
// as the dev server's /turn/, /history/, /artifacts/ and /uploads/ mounts;
// no network beyond them.
//
// URL parameters: ?session=<SafeId> opens a conversation, ?user=<subject>
// sends "Authorization: Bearer dev.<subject>" (the dev server's dev auth).
//
// The page keeps one view per turn (views), in the order of the log. A
// view is a turn of history, a turn this page sent (pending until its
// first snapshot, queued while it waits behind another, failed when the
// server refused it: the text is kept, with Retry), or a turn another
// window runs, followed over the resume route. At most one view streams
// at a time (active): the session runs one turn at a time.

import {
  forkSession,
  newId,
  isSafeId,
  readTurn,
  selectTurn,
  isConfirmationCode,
  pendingConfirmations,
  reasoning as reasoningOf,
  HTTPError,
  StreamDiagnosticError,
  TurnstreamClient,
  TurnstreamError,
  type ArtifactReference,
  type Decision,
  type Lineage,
  type Message,
  type MultitaskPolicy,
  type Part,
  type SessionSummary,
  type Siblings,
  type SnapshotEvent,
  type ToolCall,
  type Turn,
  type TurnDiagnostic,
  type TurnSummary,
  type Usage,
  type WireCode,
  type CLIENT_CODES,
} from "../src/index.js";
import { asParts, composer, idsOf, partsOf, renderFiles, type Sent } from "./attach.js";
import { morph, onHighlighter, plain as plainText, render as renderMarkdown } from "./markdown.js";
import { icon, sidebar, type Unlisted } from "./sidebar.js";
import { identify } from "./identity.js";
import { usageLine } from "./usage.js";

const PAGE = 10;
// How often an idle page asks whether the session moved on (another
// window's turn started, ended or was queued).
const WATCH_MS = 2000;

const $ = <T extends HTMLElement>(id: string): T => document.getElementById(id) as T;
const els = {
  status: $("status"),
  error: $("error"),
  log: $("log"),
  edge: $("history-edge"),
  turns: $("turns"),
  empty: $("empty"),
  jump: $<HTMLButtonElement>("jump"),
  announce: $("announce"),
  form: $<HTMLFormElement>("composer"),
  input: $<HTMLTextAreaElement>("input"),
  send: $<HTMLButtonElement>("send"),
  interrupt: $<HTMLButtonElement>("interrupt"),
  stop: $<HTMLButtonElement>("stop"),
  hint: $("busy-hint"),
  who: $("who"),
};

// Who the page acts for (identity.ts): dev auth on the dev server, or an
// OpenID Connect sign-in, which may leave the page for the issuer first.
const identity = await identify().catch((e: unknown) => {
  const msg = e instanceof Error ? e.message : "The sign-in failed.";
  els.error.textContent = msg;
  els.error.hidden = false;
  status("error", "Not signed in");
  throw e;
});
const params = new URLSearchParams(location.search);
const user = identity.user;
const client = new TurnstreamClient({
  turnURL: "/turn/",
  historyURL: "/history/",
  artifactsURL: "/artifacts/",
  headers: identity.headers,
  storageURL: identity.storageURL,
  // The compact stream (docs/compact.md): text every 50 ms for a few
  // bytes more than the answer itself, instead of paced complete snapshots.
  compact: true,
});

// ---- Which conversation, and the sidebar ----------------------------------

// The conversation this tab started last, until the server lists it
// (sessionStorage: this tab's, per user). Not sent to yet, the server has
// nothing of it and the page asks it nothing (no 404s); the sidebar shows
// it first until its first turn has ended and the list holds it.
const tabKey = `turnstream.new.${user || "local"}`;
function unlisted(): Unlisted | undefined {
  try {
    const v = JSON.parse(sessionStorage.getItem(tabKey) ?? "null");
    return isSafeId(v?.id) ? { id: v.id, sent: v.sent === true } : undefined;
  } catch {
    return undefined;
  }
}
function setUnlisted(u: Unlisted | undefined): void {
  try {
    if (u) sessionStorage.setItem(tabKey, JSON.stringify(u));
    else sessionStorage.removeItem(tabKey);
  } catch {
    /* storage refused: the sidebar shows what the server lists */
  }
}

// ?session= names the conversation; without it the page starts a new one
// (this tab's unsent one, if it has one). A session id from a link may be
// someone else's (or nobody's yet): its "not found" is shown as an error.
let sessionId = params.get("session") ?? "";
if (!isSafeId(sessionId)) sessionId = "";
if (sessionId === "") {
  const u = unlisted();
  sessionId = u && !u.sent ? u.id : newId();
  setUnlisted({ id: sessionId, sent: false });
  setParam("session", sessionId);
}
let fresh = unlisted()?.id === sessionId && unlisted()?.sent === false;

function setParam(k: string, v: string): void {
  const u = new URL(location.href);
  u.searchParams.set(k, v);
  history.replaceState(null, "", u);
}

function href(id: string): string {
  const u = new URL(location.href);
  u.searchParams.set("session", id);
  return u.href;
}

function newChat(): void {
  const id = newId();
  setUnlisted({ id, sent: false });
  location.assign(href(id));
}

// ---- Status, errors, announcements, in plain words ---------------------

type State = "idle" | "loading" | "ready" | "streaming" | "stopped" | "error";
function status(state: State, text: string): void {
  els.status.dataset.state = state;
  els.status.querySelector(".text")!.textContent = text;
}

// Keyed by the server's codes (WireCode, generated from the Go table) and
// the client's own: a code that no longer exists fails the type check.
const PLAIN: Partial<Record<WireCode | (typeof CLIENT_CODES)[number], string>> = {
  SESSION_NOT_FOUND: "This conversation can't be opened. It doesn't exist, or it belongs to another account.",
  SESSION_BUSY: "Another answer is still being written in this conversation, so this message was not sent.",
  SESSION_CONFLICT: "Another answer is still being written in this conversation, so this message was not sent.",
  SESSION_QUEUE_FULL: "Too many messages are already waiting in this conversation. Send this one when one of them has run.",
  MULTITASK_NOT_ALLOWED: "This conversation doesn't take messages while an answer is being written.",
  REQUEST_UNAUTHENTICATED: "You're not signed in, so the server refused the request.",
  REQUEST_FORBIDDEN: "Your account may not do that.",
  REQUEST_TOO_LARGE: "That message is too long to send. Shorten it and try again.",
  NETWORK_FAILED: "The server can't be reached. Check that the dev server is still running, then try again.",
  STREAM_INCOMPLETE: "The connection dropped before the answer finished. Reload the page to see what was saved.",
  SERVER_TIMEOUT: "The answer took too long and was cut off.",
  SERVER_INTERNAL: "Something went wrong on the server. Try again in a moment.",
  RESPONSE_INVALID: "The server sent something this page doesn't understand.",
  LINEAGE_INVALID: "That message can no longer be edited or answered again: the conversation changed.",
  TURN_INTERRUPTED: "Stopped.",
  TURN_LOST: "The server stopped while writing this answer. What it had written is saved.",
  TURN_OUTCOME_INDETERMINATE: "The server couldn't confirm this answer was saved. Reload the page in a moment to see how it ended.",
  TURN_QUEUE_EXPIRED: "This message waited too long behind other answers and was not sent.",
  TURN_CANCELLED: "Cancelled before it was sent.",
  MODEL_FAILED: "The model failed to answer. Try again.",
  CHAT_TURN_FAILED: "The answer failed. Try again.",
  CONFIRMATION_DECIDED: "This tool call was already approved or denied, perhaps in another window.",
  CONFIRMATION_EXPIRED: "It's too late to decide on this tool call: it waited too long, or a later message replaced it.",
  CONFIRMATION_NOT_FOUND: "This tool call is no longer waiting for a decision.",
  QUOTA_EXCEEDED: "You've reached a usage limit for now. Wait a little, then send again.",
  QUOTA_UNAVAILABLE: "The server can't check your usage limits right now. Try again in a moment.",
  LIMIT_EXCEEDED: "This answer stopped at a usage limit. What it wrote is kept.",
  ATTACHMENT_NOT_FOUND: "A file attached to this message can no longer be found. Attach it again.",
  ATTACHMENT_EXPIRED: "A file attached to this message was uploaded too long ago. Attach it again.",
  ATTACHMENT_INVALID: "A file attached to this message can't be sent: its content isn't of its type, there are too many files, or it went with another message already.",
};
function plain(code: string, message: string): string {
  return (PLAIN as Record<string, string | undefined>)[code] ?? message;
}

function asError(e: unknown): TurnstreamError {
  if (e instanceof TurnstreamError) return e;
  console.error(e);
  return new TurnstreamError("CLIENT", "Something went wrong in this page.", false);
}

function showError(e: unknown): void {
  const err = asError(e);
  els.error.replaceChildren(text("span", plain(err.code, err.message)), text("span", err.code, "code mono"));
  els.error.hidden = false;
  status("error", err.retryable ? "Error · try again" : "Error");
  if (err.code === "NETWORK_FAILED") watchServer(2000);
}
function clearError(): void {
  clearTimeout(probe);
  els.error.hidden = true;
  els.error.replaceChildren();
}

// While the banner says the server cannot be reached, the page asks it
// again (its /config.json, the smallest answer it has) after 2 s, then
// twice as long each time up to 30 s, and takes the banner down once it
// answers: nobody has to click Retry to learn the server is back. A message
// that failed keeps its own Retry.
let probe: ReturnType<typeof setTimeout> | undefined;
function watchServer(delay: number): void {
  clearTimeout(probe);
  probe = setTimeout(async () => {
    try {
      const res = await fetch("/config.json", { cache: "no-store" });
      if (res.ok && !els.error.hidden) {
        clearError();
        if (els.status.dataset.state === "error") status("ready", "Ready");
        announce("Connected again.");
        return;
      }
    } catch {
      /* still out of reach */
    }
    if (!els.error.hidden) watchServer(Math.min(delay * 2, 30_000));
  }, delay);
}

// announce says s to screen readers, once (the live region is polite).
function announce(s: string): void {
  els.announce.textContent = "";
  requestAnimationFrame(() => (els.announce.textContent = s));
}

function text(tag: string, s: string, cls?: string): HTMLElement {
  const el = document.createElement(tag);
  el.textContent = s;
  if (cls) el.className = cls;
  return el;
}

function button(label: string, action: string, cls = "ghost", aria?: string): HTMLButtonElement {
  const b = text("button", label, cls) as HTMLButtonElement;
  b.type = "button";
  b.dataset.action = action;
  if (aria) b.setAttribute("aria-label", aria);
  return b;
}

function clock(iso: string): HTMLElement {
  const t = document.createElement("time");
  t.dateTime = iso;
  const d = new Date(iso);
  t.textContent = Number.isNaN(d.getTime()) ? "" : d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  t.title = Number.isNaN(d.getTime()) ? iso : d.toLocaleString();
  return t;
}

// ---- Views ---------------------------------------------------------------

type Rating = "up" | "down";

type ViewState =
  | "history" // a saved turn from history (or one that ended here)
  | "pending" // sent, no answer yet
  | "queued" // waiting behind another turn (server queue)
  | "waiting" // held by this page until the session is free (no server queue)
  | "streaming"
  | "failed"; // refused or never started: the text is kept

interface View {
  id: string;
  el: HTMLElement;
  state: ViewState;
  messages: Message[];
  /** complete, error or running as the server last said (history, snapshots). */
  turnStatus: string;
  error: TurnDiagnostic | null;
  artifacts: ArtifactReference[];
  usage?: Usage;
  /** What the user typed, for a turn this page sent. */
  input: string;
  /** The ids of the files sent with it, and their parts until the server's message shows them. */
  attachments?: string[];
  parts?: Part[];
  lineage?: Lineage;
  /** A decision turn: its user message is a label, not shown. */
  decision: boolean;
  position?: number;
  turn?: Turn;
  failure?: TurnstreamError;
  /** A view of a running turn this page cannot follow (no resume). */
  elsewhere?: boolean;
  /** Ends the page's reading of the turn (a cancelled queued turn). */
  abort?: AbortController;
  cancelled?: boolean;
  /** The owner's rating of the answer (history's feedback, or a thumb pressed here). */
  rating?: Rating | null;
  /** A rating is being saved. */
  savingRating?: boolean;
  /** The versions of this answer (an edit, a retry or a regeneration keeps them; docs/branches.md). */
  siblings?: Siblings;
}

// versions holds the turns of answers' other versions this page has read
// or shown, by turn id: a switch to one of them shows it at once, while
// the server moves the conversation to it.
const versions = new Map<string, Partial<View>>();

const views = new Map<string, View>();
let active: View | undefined;
let stopping = false;
// The session's last sequence this page has seen (summary or snapshot).
let lastCursor = -1;
let policies: MultitaskPolicy[] = ["reject"];

function newView(id: string, init: Partial<View>): View {
  const el = document.createElement("section");
  el.className = "turn";
  el.dataset.turn = id;
  const v: View = { id, el, state: "history", messages: [], turnStatus: "complete", error: null, artifacts: [], input: "", decision: false, ...init };
  views.set(id, v);
  return v;
}

// append adds v's element to the log: a message of this page that is not
// sent yet (pending, queued, held, failed) stays last, so a turn that
// arrives from another window goes before it.
function append(v: View): void {
  const unsent = (x: View): boolean => x.state === "waiting" || x.state === "failed" || ((x.state === "queued" || x.state === "pending") && x.input !== "");
  const before = unsent(v) ? undefined : [...views.values()].find((x) => x !== v && x.el.isConnected && unsent(x));
  if (before) before.el.before(v.el);
  else els.turns.append(v.el);
  els.empty.hidden = true;
}

function userMessage(v: View): Message {
  const m: Message = { id: `${v.id}.pending`, role: "user", content: v.input, status: "complete", createdAt: new Date().toISOString() };
  if (v.parts?.length) m.parts = v.parts;
  return m;
}

// Tool calls waiting for the user's approval: toolCallId -> token, from a
// finished turn's pendingConfirmations or the history summary's
// pendingInteractions. A later turn supersedes them all.
const waiting = new Map<string, string>();
// Decided calls: toolCallId -> the decision, from the decision turns'
// metadata.confirmation: the asking turn's record keeps
// requires_confirmation, so the page says what became of it.
const decided = new Map<string, Decision>();
// Calls whose decision the server refused: toolCallId -> why, in plain words.
const refused = new Map<string, string>();
let deciding = false;

function noteDecisions(messages: readonly Message[]): boolean {
  let changed = false;
  for (const m of messages) {
    const d = decisionOf(m);
    if (d && decided.get(d.toolCallId) !== d.decision) {
      decided.set(d.toolCallId, d.decision);
      changed = true;
    }
  }
  return changed;
}

function decisionOf(m: Message): { toolCallId: string; decision: Decision } | undefined {
  const c = m.metadata?.confirmation;
  if (typeof c !== "object" || c === null || Array.isArray(c)) return undefined;
  const id = c.toolCallId;
  const d = c.decision;
  if (typeof id !== "string" || (d !== "approve" && d !== "deny")) return undefined;
  return { toolCallId: id, decision: d };
}

// isDecisionTurn: a turn whose assistant message records the decision it
// carried (its user message is the decision's label).
function isDecisionTurn(messages: readonly Message[]): boolean {
  return messages.some((m) => m.role === "assistant" && decisionOf(m) !== undefined);
}

// paint brings v's element up to date. Each message is one article, kept
// from paint to paint, its text morphed (markdown.ts), so a growing
// answer changes only its last block.
function paint(v: View): void {
  const following = nearBottom();
  const shown: Message[] = v.messages.length ? v.messages.filter((m) => m.role === "user" || m.role === "assistant") : [];
  if (!shown.some((m) => m.role === "user") && v.input && !v.decision) shown.unshift(userMessage(v));
  const decision = v.decision || isDecisionTurn(v.messages);
  const keep = new Set<string>();
  let prev: HTMLElement | null = null;
  const lastAssistant = [...shown].reverse().find((m) => m.role === "assistant");
  const lastUser = [...shown].reverse().find((m) => m.role === "user");
  for (const m of shown) {
    if (m.role === "user" && decision) continue; // a label the user never typed
    let art = v.el.querySelector<HTMLElement>(`:scope > article[data-id="${CSS.escape(m.id)}"]`);
    if (!art) {
      art = document.createElement("article");
      art.className = "msg";
      art.dataset.id = m.id;
      art.append(text("header", "", "meta"));
      for (const cls of ["files", "thinking", "tools", "text md", "extra"]) art.append(text("div", "", cls));
    }
    // Moved only when out of place: moving an element, even to where it
    // is, takes the focus from what it holds.
    if (prev ? prev.nextElementSibling !== art : v.el.firstElementChild !== art) {
      if (prev) prev.after(art);
      else v.el.prepend(art);
    }
    prev = art;
    keep.add(m.id);
    paintMessage(v, m, art, m === lastAssistant || m === lastUser, m === lastUser);
  }
  for (const a of v.el.querySelectorAll<HTMLElement>(":scope > article")) if (!keep.has(a.dataset.id!)) a.remove();
  let note = v.el.querySelector<HTMLElement>(":scope > .elsewhere");
  if (v.elsewhere && !note) {
    note = text("p", "An answer is being written in another window. It appears here when it is finished.", "elsewhere");
    v.el.append(note);
  } else if (!v.elsewhere) note?.remove();
  v.el.dataset.state = v.state;
  prefetch(v);
  // What needs the person in the newest turn (an approval, a message that
  // was not sent, the notice of a stopped or failed answer) comes into
  // view when it appears, unless the reader had scrolled up to read.
  const needs = v.el === els.turns.lastElementChild ? v.el.querySelector<HTMLElement>(".decision, .failed, .notice") : null;
  if (needs && !needs.dataset.shown) {
    needs.dataset.shown = "true";
    if (following) needs.scrollIntoView({ block: "nearest" });
  }
}

function paintMessage(v: View, m: Message, art: HTMLElement, last: boolean, isUser: boolean): void {
  const stopped = m.role === "assistant" && v.error?.code === "TURN_INTERRUPTED";
  const msgStatus = stopped ? "stopped" : m.status;
  art.dataset.role = m.role;
  art.dataset.status = msgStatus;
  const headId = `h-${v.id}-${m.role}-${m.id}`.replace(/[^\w-]/g, "_");
  art.setAttribute("aria-labelledby", headId);
  const [meta, files, thinking, tools, body, extra] = Array.from(art.children) as HTMLElement[];
  // Header: who, when, how it stands.
  const who = text("span", m.role === "user" ? "You" : "Assistant", "who");
  who.id = headId;
  const parts: Node[] = [who, clock(m.createdAt)];
  if (m.role === "assistant") {
    if (msgStatus === "streaming") parts.push(text("span", "writing…", "state"));
    else if (stopped) parts.push(text("span", "stopped", "state"));
    else if (msgStatus === "error") parts.push(text("span", "failed", "state"));
  }
  if (isUser && v.state === "queued") parts.push(text("span", `queued · ${v.position ?? 1}`, "state"));
  if (isUser && v.state === "waiting") parts.push(text("span", "waiting to send", "state"));
  if (isUser && v.state === "failed") parts.push(text("span", "not sent", "state fail"));
  replaceKeepingFocus(meta!, parts);
  renderFiles(files!, m.parts ?? [], client, sessionId);
  paintThinking(thinking!, reasoningOf(m), msgStatus === "streaming" && m.content === "");
  art.dataset.hasTools = String((m.toolCalls ?? []).length > 0);
  // Tool calls.
  replaceKeepingFocus(tools!, (m.toolCalls ?? []).map((c) => renderToolCall(c, m)));
  // Text.
  morph(body!, renderMarkdown(m.content));
  // Notices, artifacts and actions.
  const more: Node[] = [];
  if (m.role === "assistant" && last && v.artifacts.length) more.push(renderArtifacts(v.artifacts));
  if (m.role === "assistant" && last && v.error) {
    more.push(text("div", plain(v.error.code, v.error.message), v.error.code === "TURN_INTERRUPTED" ? "notice" : "notice fail"));
  }
  if (isUser && v.state === "failed" && v.failure) more.push(renderFailure(v));
  if (isUser && (v.state === "queued" || v.state === "waiting")) {
    const row = document.createElement("div");
    row.className = "actions";
    row.append(button("Cancel", "cancel", "ghost", "Cancel this queued message"));
    more.push(row);
  }
  const acts = last ? actionsFor(v, m) : undefined;
  if (acts) more.push(acts);
  replaceKeepingFocus(extra!, more);
}

// paintThinking shows a message's reasoning (metadata.reasoning) in a
// Thinking block: open while the model thinks (nothing of the answer yet),
// folded once the answer starts, unless the reader opened or closed it.
function paintThinking(el: HTMLElement, reasoning: string, now: boolean): void {
  el.hidden = reasoning === "";
  if (!reasoning) return el.replaceChildren();
  let d = el.firstElementChild as HTMLDetailsElement | null;
  if (!d) {
    d = document.createElement("details");
    const s = document.createElement("summary");
    s.addEventListener("click", () => (d!.dataset.reader = "1"));
    d.append(s, text("div", "", "md"));
    el.append(d);
  }
  d.firstElementChild!.textContent = now ? "Thinking…" : "Thinking";
  if (!d.dataset.reader) d.open = now;
  morph(d.lastElementChild as HTMLElement, renderMarkdown(reasoning));
}

// replaceKeepingFocus replaces el's children; a button that had the focus
// gives it to its replacement (the same data-action), so re-rendering a
// message never drops the focus to the page.
function replaceKeepingFocus(el: HTMLElement, nodes: Node[]): void {
  const focused = document.activeElement instanceof HTMLElement && el.contains(document.activeElement) ? document.activeElement : undefined;
  const key = focused?.dataset.action;
  const call = focused?.closest<HTMLElement>("[data-call]")?.dataset.call;
  el.replaceChildren(...nodes);
  if (focused && key) {
    const sel = call ? `[data-call="${CSS.escape(call)}"] [data-action="${key}"]` : `[data-action="${key}"]`;
    const same = el.querySelector<HTMLElement>(sel);
    if (same) same.focus();
  }
}

function renderFailure(v: View): HTMLElement {
  const e = v.failure!;
  const box = document.createElement("div");
  box.className = "failed";
  box.append(text("p", plain(e.code, e.message), "why"));
  const row = document.createElement("div");
  row.className = "actions";
  const busy = e.code === "SESSION_BUSY" || e.code === "SESSION_CONFLICT" || e.code === "SESSION_QUEUE_FULL";
  if (busy && policies.includes("enqueue")) row.append(button("Queue it", "queue", "primary", "Queue it: send this message after the answer being written"));
  if (busy) row.append(button("Send when ready", "when-ready", busy && policies.includes("enqueue") ? "ghost" : "primary"));
  if (busy && policies.includes("interrupt")) row.append(button("Stop that answer and send", "interrupt-send"));
  if (!busy) row.append(button("Retry", "retry-send", "primary", "Retry sending this message"));
  row.append(button("Edit", "edit-failed", "ghost", "Edit: put this message back in the message box"), button("Discard", "discard"));
  box.append(row);
  return box;
}

function actionsFor(v: View, m: Message): HTMLElement | undefined {
  if (v.state !== "history" || v.elsewhere) return undefined;
  if (v.turnStatus === "running" || v.turnStatus === "streaming") return undefined;
  const row = document.createElement("div");
  row.className = "actions";
  const decision = v.decision || isDecisionTurn(v.messages);
  const busy = busyNow() ? "true" : "false";
  if (m.role === "user" && v.siblings && editedVersions(v)) row.append(switcher(v, "message"));
  if (m.role === "user" && !decision) row.append(button("Edit", "edit", "ghost link", "Edit this message and ask again"));
  if (m.role === "assistant") {
    if (v.siblings) row.append(switcher(v, "answer"));
    if (v.turnStatus === "complete") row.append(thumbs(v));
    if (m.content.trim()) row.append(button("Copy", "copy-answer", "ghost link", "Copy this answer"));
    // What the answer cost, for whoever asks (not shown unasked).
    const u = v.usage;
    if (u && u.totalTokens > 0) {
      const open = usageShown.has(v.id);
      const b = button("Usage", "usage", "ghost link", "Usage of this answer");
      b.setAttribute("aria-expanded", String(open));
      row.append(b);
      if (open) row.append(text("span", `${u.promptTokens.toLocaleString("en-US")} in · ${u.completionTokens.toLocaleString("en-US")} out tokens`, "tokens"));
    }
    if (!decision) {
      if (v.turnStatus === "complete") row.append(button("Regenerate", "regenerate", "ghost link", "Regenerate this answer"));
      else row.append(button("Retry", "retry", "ghost link", "Retry this message"));
      if (v.turnStatus === "complete") row.append(button("Fork", "fork", "ghost link", "Fork into a new chat from here"));
    }
  }
  for (const b of row.querySelectorAll<HTMLElement>(BUSY_ACTIONS)) b.setAttribute("aria-disabled", b.dataset.edge === "true" ? "true" : busy);
  return row.childElementCount ? row : undefined;
}

// usageShown holds the turns whose Usage the reader opened.
const usageShown = new Set<string>();

// BUSY_ACTIONS are the buttons a running turn disables: they would
// start a turn, or move the conversation under it.
const BUSY_ACTIONS = '[data-action="edit"], [data-action="regenerate"], [data-action="retry"], [data-action="version-prev"], [data-action="version-next"], [data-action="fork"]';

// switcher is "‹ 2 / 3 ›" under an answer with versions (and under its
// question when they differ there too): the buttons move to the previous
// and next version.
function switcher(v: View, what: "answer" | "message"): HTMLElement {
  const g = v.siblings!;
  const group = document.createElement("span");
  group.className = "versions";
  group.setAttribute("role", "group");
  group.setAttribute("aria-label", `Versions of this ${what}`);
  const prev = button("‹", "version-prev", "ghost step", `Previous version of this ${what}`);
  const next = button("›", "version-next", "ghost step", `Next version of this ${what}`);
  if (g.index === 0) prev.dataset.edge = "true";
  if (g.index === g.count - 1) next.dataset.edge = "true";
  group.append(prev, text("span", `${g.index + 1} / ${g.count}`, "count"), next);
  return group;
}

// editedVersions reports whether the versions of v's answer this page
// holds differ in the question too (an edit made one of them).
function editedVersions(v: View): boolean {
  const asked = (p: Partial<View> | undefined): string | undefined => p?.messages?.find((m) => m.role === "user")?.content;
  const mine = asked(v);
  return v.lineage?.operation === "edit" || v.siblings!.turnIds.some((id) => id !== v.id && asked(versions.get(id)) !== undefined && asked(versions.get(id)) !== mine);
}

// prefetch reads the versions next to v's into versions, so that a
// switch to them is immediate.
function prefetch(v: View): void {
  const g = v.siblings;
  if (!g || v.state !== "history") return;
  for (const id of [g.turnIds[g.index - 1], g.turnIds[g.index + 1]]) {
    if (id === undefined || versions.has(id)) continue;
    versions.set(id, {}); // asked once
    readTurn(client, sessionId, id).then(
      (t) => {
        versions.set(id, fromSummary(t));
        if (views.get(v.id) === v) paint(v); // the question's switcher may now show
      },
      () => versions.delete(id),
    );
  }
}

// switchVersion shows the version delta away from v's at once, from what
// the page holds (or one read), in place of v and the turns after it;
// then the server makes it the active branch and the turns that followed
// it come from history.
async function switchVersion(v: View, delta: number): Promise<void> {
  const g = v.siblings;
  const id = g?.turnIds[g.index + delta];
  if (!g || id === undefined || busyNow()) return;
  clearError();
  try {
    let held = versions.get(id);
    if (!held?.messages) held = fromSummary(await readTurn(client, sessionId, id));
    const nv = newView(id, { ...held, siblings: { ...g, index: g.index + delta } });
    versions.set(v.id, { ...v, el: undefined });
    let after = false;
    for (const x of [...views.values()]) {
      if (x === v) after = true;
      if (after && x !== nv && x.state === "history") {
        views.delete(x.id);
        if (x === v) x.el.replaceWith(nv.el);
        else x.el.remove();
      }
    }
    paint(nv);
    announce(`Version ${g.index + delta + 1} of ${g.count}.`);
    nv.el.querySelector<HTMLElement>(`[data-action="version-${delta < 0 ? "prev" : "next"}"]:not([aria-disabled="true"])`)?.focus();
    await selectTurn(client, sessionId, id);
    await followersOf(nv);
    prefetch(nv);
  } catch (e) {
    showError(e);
    views.clear();
    els.turns.replaceChildren();
    await loadFirst();
  }
}

// followersOf adds the turns history shows after v (the branch v's
// version leads to), reading pages newest first until it reaches v.
async function followersOf(v: View): Promise<void> {
  const found: TurnSummary[] = [];
  let cursor: string | undefined;
  for (let pages = 0; pages < 10; pages++) {
    const page = await client.turns(sessionId, { limit: PAGE, order: "desc", cursor });
    const i = page.items.findIndex((t) => t.turnId === v.id);
    found.push(...(i < 0 ? page.items : page.items.slice(0, i)));
    if (i >= 0 || !page.hasMore || page.nextCursor === null) break;
    cursor = page.nextCursor;
  }
  let at: HTMLElement = v.el;
  for (const t of found.reverse()) {
    if (views.has(t.turnId)) continue;
    const f = newView(t.turnId, fromSummary(t));
    paint(f);
    at.after(f.el);
    at = f.el;
  }
}

// fork opens a new conversation holding this one up to v's answer.
async function fork(v: View): Promise<void> {
  clearError();
  try {
    const item = await forkSession(client, sessionId, { atTurnId: v.id });
    location.assign(href(item.sessionId));
  } catch (e) {
    showError(e);
  }
}

// thumbs are a complete answer's two toggles: pressed is the rating the
// owner gave; pressing it again takes the rating back.
const THUMB = "M7 11v9H4v-9zM7 11l4-8c1.4 0 2.4 1 2.2 2.5L12.7 9H19a2 2 0 0 1 2 2.3l-1.2 7A2 2 0 0 1 17.8 20H7";
function thumbs(v: View): HTMLElement {
  const group = document.createElement("span");
  group.className = "rate";
  group.setAttribute("role", "group");
  group.setAttribute("aria-label", "Rate this answer");
  for (const [r, label] of [["up", "Good answer"], ["down", "Bad answer"]] as const) {
    const b = button("", `rate-${r}`, "ghost icon thumb", label);
    b.title = label;
    b.setAttribute("aria-pressed", String(v.rating === r));
    b.append(icon(THUMB));
    group.append(b);
  }
  return group;
}

async function rate(v: View, r: Rating): Promise<void> {
  if (v.savingRating) return;
  const was = v.rating ?? null;
  const next = was === r ? null : r;
  v.savingRating = true;
  v.rating = next;
  paint(v);
  try {
    await client.setFeedback(sessionId, v.id, next && { rating: next });
    announce(next === null ? "Rating removed." : next === "up" ? "Rated a good answer." : "Rated a bad answer.");
  } catch (e) {
    v.rating = was;
    paint(v);
    showError(e);
  } finally {
    v.savingRating = false;
  }
}

function renderToolCall(c: ToolCall, m: Message): HTMLElement {
  const box = document.createElement("div");
  box.className = "tool";
  box.dataset.tool = c.name;
  box.dataset.call = c.id;
  const deniedHere = c.status === "error" && decisionOf(m)?.toolCallId === c.id && decisionOf(m)?.decision === "deny";
  const d = decided.get(c.id);
  let shown: string = c.status;
  let label: string = c.status.replace("_", " ");
  let note: string | undefined;
  if (deniedHere) {
    shown = "denied";
    label = "denied";
  } else if (c.status === "requires_confirmation") {
    if (d === "approve") {
      shown = "approved";
      label = "approved";
      note = "You approved this call; it runs in the turn below.";
    } else if (d === "deny") {
      shown = "denied";
      label = "denied";
      note = "You denied this call; it did not run.";
    } else if (waiting.has(c.id)) {
      label = "needs approval";
    } else {
      shown = "expired";
      label = "not decided";
      note = "This call was not approved in time, or a later message replaced it; it did not run.";
    }
  }
  box.dataset.status = shown;
  const head = document.createElement("div");
  head.className = "head";
  head.append(text("span", "Tool", ""), text("span", c.name, "name"));
  const badge = text("span", label, "badge");
  badge.dataset.status = shown;
  head.append(badge);
  box.append(head);
  const dl = document.createElement("dl");
  for (const [k, val] of Object.entries(c.args)) dl.append(text("dt", k), text("dd", typeof val === "string" ? val : JSON.stringify(val)));
  if (dl.childElementCount) box.append(dl);
  if (c.result !== undefined) box.append(text("div", c.result, "result"));
  if (deniedHere) box.append(text("div", "You denied this call; it did not run.", "decided"));
  else if (c.error !== undefined) box.append(text("div", c.error, "notice fail"));
  const why = refused.get(c.id);
  if (why !== undefined && d === undefined) {
    const n = text("div", why, "notice");
    n.tabIndex = -1;
    box.append(n);
  } else if (note) {
    const n = text("div", note, "decided");
    n.tabIndex = -1;
    box.append(n);
  }
  const token = c.status === "requires_confirmation" && d === undefined && why === undefined ? waiting.get(c.id) : undefined;
  if (token !== undefined) box.append(renderDecision(c, token));
  return box;
}

function renderDecision(c: ToolCall, token: string): HTMLElement {
  const row = document.createElement("div");
  row.className = "decision";
  row.dataset.token = token;
  row.setAttribute("role", "group");
  row.setAttribute("aria-label", `Approve or deny ${c.name}`);
  row.append(text("span", "This tool runs only if you approve it.", "ask"));
  for (const [d, label] of [["approve", "Approve"], ["deny", "Deny"]] as const) {
    const b = button(label, d, d === "approve" ? "primary" : "ghost", `${label} ${c.name}`);
    b.dataset.decision = d;
    b.setAttribute("aria-disabled", String(deciding || active !== undefined));
    row.append(b);
  }
  return row;
}

function renderArtifacts(list: readonly ArtifactReference[]): HTMLElement {
  const row = document.createElement("div");
  row.className = "artifacts";
  row.setAttribute("role", "list");
  row.setAttribute("aria-label", "Artifacts");
  for (const a of list) {
    const chip = document.createElement("span");
    chip.className = "artifact";
    chip.setAttribute("role", "listitem");
    chip.dataset.path = a.entryPath;
    const icon = document.createElement("span");
    icon.className = "icon";
    icon.setAttribute("aria-hidden", "true");
    chip.append(icon, text("span", a.entryPath, "mono"), text("span", a.artifactType, "kind"));
    row.append(chip);
  }
  return row;
}

function repaintAll(): void {
  for (const v of views.values()) paint(v);
}

// Code blocks drawn before the highlighter arrived are drawn again with it.
onHighlighter(repaintAll);

// ---- Scrolling, "jump to latest" ------------------------------------------

function nearBottom(): boolean {
  const l = els.log;
  return l.scrollHeight - l.scrollTop - l.clientHeight < 80;
}
function toBottom(): void {
  els.log.scrollTop = els.log.scrollHeight;
  els.jump.hidden = true;
}
els.jump.addEventListener("click", () => {
  toBottom();
  const arts = els.turns.querySelectorAll<HTMLElement>("article");
  const last = arts[arts.length - 1];
  if (last) {
    last.tabIndex = -1;
    last.focus();
  } else els.input.focus();
});

// ---- History --------------------------------------------------------------

let older: string | null = null;
let loadingOlder = false;
const loadButton = button("Load earlier messages", "load-older");
loadButton.addEventListener("click", () => void loadOlder());
const startNote = text("span", "Beginning of the conversation");
startNote.tabIndex = -1;

function edge(state: "more" | "loading" | "start" | "none"): void {
  els.edge.dataset.state = state;
  const hadFocus = document.activeElement === loadButton;
  if (state === "more" || state === "loading") {
    // The same button stays, so a keyboard user keeps the focus on it.
    loadButton.textContent = state === "loading" ? "Loading earlier messages…" : "Load earlier messages";
    loadButton.setAttribute("aria-disabled", String(state === "loading"));
    if (els.edge.firstChild !== loadButton) els.edge.replaceChildren(loadButton);
    return;
  }
  els.edge.replaceChildren(...(state === "start" ? [startNote] : []));
  if (hadFocus) (state === "start" ? startNote : els.input).focus();
}

// ratingOf reads a saved turn's rating: its feedback, or (from a server
// that sends it only there) its assistant message's metadata.feedback.
function ratingOf(t: TurnSummary): Rating | null {
  const f = t.feedback ?? t.messages.find((m) => m.role === "assistant")?.metadata?.feedback;
  const r = typeof f === "object" && f !== null && !Array.isArray(f) ? f.rating : undefined;
  return r === "up" || r === "down" ? r : null;
}

function fromSummary(t: TurnSummary): Partial<View> {
  return {
    rating: ratingOf(t),
    state: "history",
    messages: t.messages,
    turnStatus: t.status === "interrupted" ? "error" : t.status,
    error: t.error,
    artifacts: t.artifacts,
    usage: t.usage,
    lineage: t.lineage,
    decision: isDecisionTurn(t.messages),
    siblings: t.siblings,
  };
}

// cancelledUnsent reports whether t is a queued message cancelled before
// it ran (TURN_CANCELLED, no answer): the reader took it back, so the page
// does not show it. Its record reaches history when the queue passes it,
// which can be after the page removed it.
function cancelledUnsent(t: TurnSummary): boolean {
  return t.error?.code === "TURN_CANCELLED" && !t.messages.some((m) => m.role === "assistant");
}

function prependTurns(turns: readonly TurnSummary[]): void {
  // Pages are newest first; the log reads oldest first.
  for (const t of turns) noteDecisions(t.messages);
  const frag = document.createDocumentFragment();
  for (const t of [...turns].reverse()) {
    if (views.has(t.turnId) || cancelledUnsent(t)) continue;
    const v = newView(t.turnId, fromSummary(t));
    paint(v);
    frag.append(v.el);
  }
  els.turns.prepend(frag);
}

async function loadFirst(): Promise<void> {
  if (fresh) {
    edge("none");
    els.empty.hidden = false;
    status("ready", "Ready");
    void capabilities();
    return;
  }
  status("loading", "Loading…");
  void capabilities();
  try {
    const summary = client.session(sessionId).catch(() => undefined); // the turns' own error is shown below
    const page = await client.turns(sessionId, { limit: PAGE, order: "desc" });
    const s = await summary;
    if (s) for (const p of s.pendingInteractions) waiting.set(p.data.toolCallId, p.interactionId);
    prependTurns(page.items);
    older = page.nextCursor;
    edge(page.hasMore ? "more" : page.items.length ? "start" : "none");
    els.empty.hidden = page.items.length > 0;
    toBottom();
    // A turn history shows running is being answered: say so at once.
    if (page.items[0]?.status === "running" || s?.currentTurn) status("streaming", "An answer is being written…");
    else status("ready", "Ready");
    if (s) await catchUp(s);
  } catch (e) {
    edge("none");
    showError(e);
  }
}

async function loadOlder(): Promise<void> {
  if (older === null || loadingOlder) return;
  loadingOlder = true;
  edge("loading");
  try {
    const page = await client.turns(sessionId, { limit: PAGE, order: "desc", cursor: older });
    const before = els.log.scrollHeight;
    prependTurns(page.items);
    els.log.scrollTop += els.log.scrollHeight - before; // keep the reader's place
    older = page.nextCursor;
    edge(page.hasMore ? "more" : "start");
  } catch (e) {
    edge("more");
    showError(e);
  } finally {
    loadingOlder = false;
  }
}

els.log.addEventListener("scroll", () => {
  els.jump.hidden = nearBottom();
  // Scrolled to the top by the reader, not by the focus arriving on the button.
  if (els.log.scrollTop < 120 && document.activeElement !== loadButton) void loadOlder();
});

async function capabilities(): Promise<void> {
  policies = await client.multitaskPolicies();
  composerBusy();
}

// ---- Keeping up with the session (other windows) -------------------------

let watching = false;
let canResume: boolean | undefined;

// ended reports whether v's turn has ended (complete, or an error: a stop
// included); a turn id never runs again.
function ended(v: View | undefined): boolean {
  return v?.turnStatus === "complete" || v?.turnStatus === "error";
}

// catchUp brings the page up to what the summary says: a running turn this
// page does not follow is followed (resume) or announced; turns queued
// elsewhere are shown and followed; turns that ended elsewhere are added;
// waiting messages go once the session is free.
async function catchUp(s: SessionSummary): Promise<void> {
  const run = s.currentTurn;
  if (!deciding && !active) {
    // The calls that still wait are the summary's: a decision or a
    // message in another window settles them here too.
    const now = new Map(s.pendingInteractions.map((p) => [p.data.toolCallId, p.interactionId] as const));
    if (now.size !== waiting.size || [...now].some(([id, t]) => waiting.get(id) !== t)) {
      waiting.clear();
      for (const [id, t] of now) waiting.set(id, t);
      repaintAll();
    }
  }
  // A turn this page saw end is not followed again: the summary can name
  // it for a moment after its terminal line (until its lease is released,
  // or when it was asked for before the end).
  if (run && isSafeId(run.turnId) && !views.get(run.turnId)?.turn && !ended(views.get(run.turnId))) {
    canResume ??= await client.canResume();
    let v = views.get(run.turnId);
    if (canResume) {
      const shown = v !== undefined;
      const after = shown && Number.isSafeInteger(run.sequence) && run.sequence! >= 0 ? run.sequence : undefined;
      v ??= newView(run.turnId, { state: "streaming", turnStatus: "running" });
      if (!v.el.isConnected) append(v);
      v.elsewhere = false;
      void follow(v, client.resume({ sessionId, turnId: run.turnId, after, scope: "turn" }));
    } else if (!v) {
      v = newView(run.turnId, { state: "history", turnStatus: "running", elsewhere: true });
      append(v);
      paint(v);
      if (!active) status("streaming", "An answer is being written…");
      if (nearBottom()) toBottom();
    }
  }
  for (const q of s.queuedTurns) {
    if (views.has(q.turnId)) continue;
    const v = newView(q.turnId, { state: "queued", turnStatus: "queued", input: q.inputPreview, position: q.position, abort: new AbortController() });
    append(v);
    paint(v);
    void follow(v, client.resume({ sessionId, turnId: q.turnId, scope: "turn", queued: true, signal: v.abort!.signal }));
  }
  for (const v of views.values()) {
    const q = s.queuedTurns.find((x) => x.turnId === v.id);
    if (q && v.state === "queued" && v.position !== q.position) {
      v.position = q.position;
      paint(v);
    }
  }
  const moved = s.cursor > lastCursor;
  lastCursor = Math.max(lastCursor, s.cursor);
  if (!run && (moved || [...views.values()].some((v) => v.elsewhere || v.turnStatus === "running"))) await showNewest();
  if (!run && s.queuedTurns.length === 0 && !active) sendWaiting();
}

// watch asks for the summary every WATCH_MS while the page is visible, and
// at once when it becomes visible again.
function watch(): void {
  if (watching) return;
  watching = true;
  const tick = async (): Promise<void> => {
    if (document.visibilityState !== "visible" || fresh) return;
    try {
      await catchUp(await client.session(sessionId));
    } catch {
      /* the page shows what it has; the next tick tries again */
    }
  };
  let busy = false;
  const guarded = (): void => {
    if (busy) return;
    busy = true;
    void tick().finally(() => (busy = false));
  };
  setInterval(guarded, WATCH_MS);
  document.addEventListener("visibilitychange", guarded);
  window.addEventListener("focus", guarded);
}

// showNewest shows the newest page of turns as history has them: turns
// the page does not show yet are added, shown ones that ended elsewhere
// are brought up to date.
async function showNewest(): Promise<void> {
  let page;
  try {
    page = await client.turns(sessionId, { limit: PAGE, order: "desc" });
  } catch {
    return;
  }
  noteDecisions(page.items.flatMap((t) => t.messages));
  let added = false;
  for (const t of [...page.items].reverse()) {
    const v = views.get(t.turnId);
    if (v?.turn || v?.state === "pending" || v?.state === "failed") continue; // this page's own
    if (!v && cancelledUnsent(t)) continue;
    if (!v) {
      const nv = newView(t.turnId, fromSummary(t));
      append(nv);
      paint(nv);
      added = true;
      continue;
    }
    const seen = fromSummary(t);
    if (v.turnStatus !== seen.turnStatus || v.elsewhere) {
      Object.assign(v, seen, { elsewhere: false });
      paint(v);
      added = true;
    }
  }
  if (added) {
    void side.refresh(); // a turn that ended elsewhere moved the conversation up
    els.empty.hidden = true;
    if (nearBottom()) toBottom();
    else els.jump.hidden = false;
    repaintAll();
    if (!active) status("ready", "Ready");
  }
}

// ---- Sending, streaming, stopping ----------------------------------------

function busyNow(): boolean {
  return active !== undefined || [...views.values()].some((v) => v.state === "queued" || v.state === "pending" || v.elsewhere);
}

function composerBusy(): void {
  const busy = busyNow();
  const queue = policies.includes("enqueue");
  els.send.textContent = busy ? (queue ? "Queue" : "Send when ready") : "Send";
  els.send.setAttribute("aria-label", busy ? (queue ? "Queue the message after the answer being written" : "Send when ready: the message goes when the answer being written ends") : "Send the message");
  els.interrupt.hidden = !(busy && policies.includes("interrupt") && (active !== undefined || [...views.values()].some((v) => v.elsewhere)));
  const wasStop = document.activeElement === els.stop;
  els.stop.hidden = active === undefined;
  els.stop.textContent = stopping ? "Stopping…" : "Stop";
  els.stop.setAttribute("aria-disabled", String(stopping));
  if (wasStop && els.stop.hidden) els.input.focus(); // never drop the focus to the page
  els.hint.hidden = !busy;
  els.hint.textContent = busy
    ? queue
      ? "An answer is being written. A message you send now waits in line and goes when it ends."
      : "An answer is being written. A message you send now is held here and sent when it ends."
    : "";
  // aria-disabled, not disabled: a disabled button would drop its focus.
  for (const b of document.querySelectorAll<HTMLButtonElement>(".decision button")) b.setAttribute("aria-disabled", String(deciding || active !== undefined));
  for (const b of document.querySelectorAll<HTMLButtonElement>(BUSY_ACTIONS)) {
    b.setAttribute("aria-disabled", String(busy || b.dataset.edge === "true"));
  }
}

// sendText sends what the user wrote: at once when the session is free;
// queued on the server behind the running turn when it can queue; else
// held here until the session is free. policy forces one (interrupt).
function sendText(input: string, policy?: MultitaskPolicy, sent: Sent[] = []): void {
  clearError();
  const busy = busyNow(); // before this message's own view counts
  const v = newView(newId(), { state: "pending", input, turnStatus: "pending", attachments: sent.map((s) => s.id), parts: asParts(sent) });
  append(v);
  paint(v);
  toBottom();
  if (policy === undefined && busy) {
    if (policies.includes("enqueue")) policy = "enqueue";
    else {
      v.state = "waiting";
      paint(v);
      composerBusy();
      return;
    }
  }
  start(v, policy);
}

// start submits view v (its input, its lineage) and follows it.
function start(v: View, policy?: MultitaskPolicy): void {
  v.state = "pending";
  v.failure = undefined;
  v.abort = new AbortController();
  paint(v);
  const turn = client.submit({
    sessionId,
    turnId: v.id,
    input: v.input,
    lineage: v.lineage,
    attachments: v.attachments,
    scope: "turn",
    multitask: policy,
    signal: v.abort.signal,
    onQueued: (q) => {
      v.state = "queued";
      v.position = q.position;
      paint(v);
      composerBusy();
      announce(`Queued: it is sent when the answer before it ends (position ${q.position}).`);
    },
  });
  void follow(v, turn, () => {
    // The server took the turn: the conversation is this user's.
    if (unlisted()?.id === sessionId) setUnlisted({ id: sessionId, sent: true });
    fresh = false;
    watch();
  });
  composerBusy();
}

// sendWaiting sends the oldest message held by this page, once the
// session is free.
function sendWaiting(): void {
  if (busyNow()) return;
  const next = [...views.values()].find((v) => v.state === "waiting");
  if (next) start(next);
}

let paintQueued = false;
const dirty = new Set<View>();
// schedule paints v at the next frame: a fast stream renders at most once
// a frame, whatever its rate.
function schedule(v: View): void {
  dirty.add(v);
  if (paintQueued) return;
  paintQueued = true;
  requestAnimationFrame(flush);
}
function flush(): void {
  paintQueued = false;
  const stick = nearBottom();
  for (const v of dirty) paint(v);
  dirty.clear();
  if (stick) toBottom();
  else els.jump.hidden = false;
}

// follow reads turn into view v until its end. onStart runs on the first
// snapshot. A failure before any snapshot keeps v as failed (its text
// and a way to send it again) unless it was a queued turn cancelled.
async function follow(v: View, turn: Turn, onStart?: () => void): Promise<void> {
  v.turn = turn;
  let last: SnapshotEvent | undefined;
  try {
    for await (const snap of turn) {
      if (!last) {
        onStart?.();
        if (active && active !== v) finishActive(); // an interrupted turn's view is done
        active = v;
        stopping = false;
        v.state = "streaming";
        v.elsewhere = false;
        clearError();
        if (v.lineage && v.lineage.operation !== "submit") supersede(v.lineage.parentTurnId, v);
        if (!v.decision && v.input) settle(); // a new message supersedes the calls that waited
        composerBusy();
      }
      last = snap;
      const p = snap.payload;
      v.messages = [...p.messages];
      v.turnStatus = p.status;
      v.error = p.error ?? null;
      v.usage = p.usage;
      lastCursor = Math.max(lastCursor, snap.sequence);
      if (p.status === "complete") for (const m of p.messages) for (const c of pendingConfirmations(m)) waiting.set(c.toolCallId, c.token);
      if (noteDecisions(p.messages)) repaintAll();
      if (p.status === "streaming") {
        status("streaming", stopping ? "Stopping…" : "Answering…");
        schedule(v);
      } else {
        dirty.delete(v);
        paint(v); // the terminal state at once
      }
    }
    const p = last?.payload;
    v.state = "history";
    if (p?.status === "error" && p.error?.code === "TURN_INTERRUPTED") {
      status("stopped", "Stopped");
      announce("The answer was stopped. What it had written is kept.");
    } else if (p?.status === "error") {
      status("error", "The answer failed");
      announce(plain(p.error?.code ?? "", p.error?.message ?? "The answer failed."));
    } else {
      status("ready", "Ready");
      const answer = p?.messages.filter((m) => m.role === "assistant").at(-1);
      announce(answer ? `Assistant: ${plainText(answer.content) || "(no text)"}` : "Answered.");
    }
    paint(v);
    if (p && v.lineage && v.lineage.operation !== "submit") await showVersions(v);
    if (p && p.messages.some((m) => m.toolCalls?.length)) await showArtifacts(v);
    if (!last) await showNewest(); // it ended before its stream opened: history has it
  } catch (e) {
    if (v.cancelled) return; // cancelled here: its view is gone already
    const err = asError(e);
    v.state = last ? "history" : "failed";
    if (err instanceof StreamDiagnosticError && err.code === "TURN_CANCELLED") {
      views.delete(v.id);
      v.el.remove();
      announce("The queued message was cancelled.");
    } else if (!last) {
      v.failure = err;
      if (v.decision) {
        views.delete(v.id);
        v.el.remove();
      } else paint(v);
      if (err instanceof HTTPError && (err.code === "SESSION_BUSY" || err.code === "SESSION_CONFLICT")) {
        status("ready", "Another answer is being written");
        void client.session(sessionId).then(catchUp, () => {});
      } else if (!v.decision) {
        showError(err);
      }
      announce(`Not sent: ${plain(err.code, err.message)}`);
      if (v.decision) throw err; // decide() says it in place of the buttons
    } else {
      paint(v);
      showError(err);
    }
  } finally {
    v.turn = undefined;
    if (active === v) finishActive();
    void usage(); // what is left after this turn, or after a refusal
    composerBusy();
    // A turn that ran moved the conversation to the top of the list, and
    // its first gave it a title.
    if (last) void side.refresh();
    if (!active) sendWaiting();
  }
}

function finishActive(): void {
  active = undefined;
  stopping = false;
  composerBusy();
}

// supersede removes turn parentId and every later turn but keep: an
// edit, retry or regenerate replaced them, as history no longer shows them.
function supersede(parentId: string, keep: View): void {
  let on = false;
  for (const v of [...views.values()]) {
    if (v.id === parentId) on = true;
    if (on && v !== keep && v.state === "history") {
      versions.set(v.id, { ...v, el: undefined });
      views.delete(v.id);
      v.el.remove();
    }
  }
}

// showVersions reads, once an edit, a retry or a regeneration ended, the
// versions its answer has now (history keeps the one it replaced).
async function showVersions(v: View): Promise<void> {
  try {
    const t = await readTurn(client, sessionId, v.id);
    if (t.siblings) {
      v.siblings = t.siblings;
      paint(v);
    }
  } catch {
    /* the switcher is a bonus here: the answer itself is shown */
  }
}

// The live stream shows tool calls; the artifact references the turn
// recorded come from history once it has been saved.
async function showArtifacts(v: View): Promise<void> {
  try {
    const page = await client.turns(sessionId, { limit: 1, order: "desc" });
    const t = page.items[0];
    if (t?.turnId === v.id && t.artifacts.length) {
      v.artifacts = t.artifacts;
      paint(v);
    }
  } catch {
    /* artifacts are a bonus here: the answer itself is shown */
  }
}

async function stop(): Promise<void> {
  if (!active?.turn || stopping) return;
  stopping = true;
  composerBusy();
  status("streaming", "Stopping…");
  try {
    await active.turn.stop();
  } catch (e) {
    if (!(e instanceof TurnstreamError && e.code === "TURN_NOT_ACTIVE")) showError(e);
  }
}

// settle forgets waiting calls (all of them, or one token's, whose
// refusal note says why) and repaints: their buttons go. A focus that was
// on a button goes to the sentence in their place, or to the message box.
function settle(token?: string, note?: string): void {
  const focus = document.activeElement?.closest<HTMLElement>(".decision") ?? null;
  const focusCall = focus?.closest<HTMLElement>(".tool")?.dataset.call;
  for (const [id, t] of [...waiting]) {
    if (token !== undefined && t !== token) continue;
    waiting.delete(id);
    if (note) refused.set(id, note);
  }
  repaintAll();
  if (focus && !focus.isConnected) {
    const n = focusCall ? document.querySelector<HTMLElement>(`.tool[data-call="${CSS.escape(focusCall)}"] .notice, .tool[data-call="${CSS.escape(focusCall)}"] .decided`) : null;
    (n ?? els.input).focus();
  }
}

// decide sends the decision on a waiting call and streams the
// continuation turn (the tool's result or the denial, then the answer).
async function decide(token: string, decision: Decision, from: HTMLElement): Promise<void> {
  if (deciding || active) return;
  deciding = true;
  const card = from.closest<HTMLElement>(".tool");
  const callId = card?.dataset.call;
  composerBusy();
  clearError();
  const turn = client.decide({ sessionId, token, decision, scope: "turn" });
  const v = newView(turn.turnId, { state: "pending", decision: true, turnStatus: "pending" });
  append(v);
  toBottom();
  try {
    await follow(v, turn, () => {
      if (callId) decided.set(callId, decision);
      waiting.clear();
      // The asking card now says what became of the call; the focus goes
      // to that sentence, where the buttons were.
      const focus = card?.contains(document.activeElement) ?? false;
      repaintAll();
      if (focus && callId) document.querySelector<HTMLElement>(`.tool[data-call="${CSS.escape(callId)}"] .decided`)?.focus();
    });
  } catch (e) {
    const err = asError(e);
    showError(err);
    if (isConfirmationCode(err.code)) settle(token, plain(err.code, err.message));
    else repaintAll(); // the buttons come back: nothing was decided
  } finally {
    deciding = false;
    composerBusy();
  }
}

// ---- Editing, answering again, copying --------------------------------------

// A turn that replaces another sends the files that one's message had.
function lineageSubmit(v: View, operation: "edit" | "retry" | "regenerate", input: string, sourceMessageId: string): void {
  clearError();
  const parts = v.messages.find((m) => m.role === "user")?.parts;
  const lineage: Lineage = { operation, parentTurnId: v.id, sourceMessageId };
  const nv = newView(newId(), { state: "pending", input, turnStatus: "pending", lineage, attachments: idsOf(parts), parts: partsOf(parts) });
  append(nv);
  paint(nv);
  toBottom();
  start(nv);
  els.input.focus();
}

function openEditor(v: View, art: HTMLElement): void {
  const m = v.messages.find((x) => x.id === art.dataset.id);
  if (!m) return;
  const body = art.querySelector<HTMLElement>(".text")!;
  const extra = art.querySelector<HTMLElement>(".extra")!;
  const form = document.createElement("form");
  form.className = "editor";
  const label = text("label", "Edit your message", "sr");
  const area = document.createElement("textarea");
  area.id = `edit-${v.id}`;
  label.setAttribute("for", area.id);
  area.value = m.content;
  area.rows = Math.min(8, m.content.split("\n").length + 1);
  const save = button("Send edited message", "save-edit", "primary");
  save.type = "submit";
  const cancel = button("Cancel", "cancel-edit");
  const row = document.createElement("div");
  row.className = "actions";
  row.append(save, cancel);
  form.append(label, area, row);
  body.hidden = true;
  extra.hidden = true;
  art.append(form);
  area.focus();
  const close = (): void => {
    form.remove();
    body.hidden = false;
    extra.hidden = false;
  };
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const input = area.value;
    if (input.trim() === "" || busyNow()) return;
    close();
    lineageSubmit(v, "edit", input, m.id);
  });
  const cancelEdit = (): void => {
    close();
    art.querySelector<HTMLElement>('[data-action="edit"]')?.focus();
  };
  cancel.addEventListener("click", cancelEdit);
  area.addEventListener("keydown", (ev) => {
    if (ev.key === "Escape") cancelEdit();
    if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) {
      ev.preventDefault();
      form.requestSubmit();
    }
  });
}

async function copy(textToCopy: string, b: HTMLElement): Promise<void> {
  let ok = true;
  try {
    await navigator.clipboard.writeText(textToCopy);
  } catch {
    ok = false;
  }
  const was = b.textContent;
  const label = b.getAttribute("aria-label");
  b.textContent = ok ? "Copied" : "Copy failed";
  b.setAttribute("aria-label", b.textContent);
  announce(ok ? "Copied to the clipboard." : "The browser refused to copy; select the text and copy it yourself.");
  setTimeout(() => {
    b.textContent = was;
    if (label) b.setAttribute("aria-label", label);
  }, 1500);
}

// One listener for every button in the log (data-action).
els.log.addEventListener("click", (ev) => {
  const b = (ev.target as HTMLElement).closest<HTMLElement>("[data-action]");
  if (!b || b === loadButton) return;
  const el = b.closest<HTMLElement>(".turn");
  const v = el ? views.get(el.dataset.turn!) : undefined;
  const art = b.closest<HTMLElement>("article");
  const action = b.dataset.action!;
  if (b.getAttribute("aria-disabled") === "true") return;
  switch (action) {
    case "copy": {
      const code = b.closest(".code")?.querySelector("code");
      if (code) void copy(code.textContent ?? "", b);
      return;
    }
    case "copy-answer": {
      const m = v?.messages.find((x) => x.id === art?.dataset.id);
      if (m) void copy(m.content, b);
      return;
    }
    case "usage": {
      if (!v) return;
      if (!usageShown.delete(v.id)) usageShown.add(v.id);
      paint(v);
      art?.querySelector<HTMLElement>('[data-action="usage"]')?.focus();
      return;
    }
    case "approve":
    case "deny": {
      const token = b.closest<HTMLElement>(".decision")?.dataset.token;
      if (token) {
        for (const x of b.closest(".decision")!.querySelectorAll("button")) x.setAttribute("aria-disabled", "true");
        void decide(token, action, b);
      }
      return;
    }
  }
  if (!v) return;
  switch (action) {
    case "edit":
      if (art && !busyNow()) openEditor(v, art);
      return;
    case "regenerate":
    case "retry": {
      const u = v.messages.find((m) => m.role === "user");
      const a = v.messages.filter((m) => m.role === "assistant").at(-1);
      if (u && a && !busyNow()) lineageSubmit(v, action, u.content, a.id);
      return;
    }
    case "cancel":
      void cancelQueued(v);
      return;
    case "rate-up":
    case "rate-down":
      void rate(v, action === "rate-up" ? "up" : "down");
      return;
    case "version-prev":
    case "version-next":
      void switchVersion(v, action === "version-prev" ? -1 : 1);
      return;
    case "fork":
      if (!busyNow()) void fork(v);
      return;
    case "retry-send":
      els.input.focus();
      start(v);
      return;
    case "queue":
      els.input.focus();
      start(v, "enqueue");
      return;
    case "interrupt-send":
      els.input.focus();
      start(v, "interrupt");
      return;
    case "when-ready":
      v.state = "waiting";
      v.failure = undefined;
      paint(v);
      els.input.focus();
      composerBusy();
      void client.session(sessionId).then(catchUp, () => {});
      return;
    case "edit-failed":
    case "discard":
      if (action === "edit-failed" && els.input.value.trim() === "") {
        els.input.value = v.input;
        grow();
      }
      views.delete(v.id);
      v.el.remove();
      els.input.focus();
      composerBusy();
      return;
  }
});

async function cancelQueued(v: View): Promise<void> {
  els.input.focus();
  if (v.state === "waiting") {
    views.delete(v.id);
    v.el.remove();
    composerBusy();
    announce("The message was not sent.");
    return;
  }
  try {
    const r = await client.stop(sessionId, v.id);
    if (r.cancelled) {
      // It will never run; the server records that once the session is
      // free, which may be long after: the page stops waiting for it now.
      v.cancelled = true;
      v.abort?.abort();
      views.delete(v.id);
      v.el.remove();
      composerBusy();
      announce("The queued message was cancelled.");
    }
  } catch (e) {
    showError(e);
  }
}

// ---- The composer --------------------------------------------------------

const files = composer({
  client,
  sessionId,
  form: els.form,
  input: els.input,
  button: $<HTMLButtonElement>("attach"),
  picker: $<HTMLInputElement>("files"),
  list: $("chips"),
  alert: $("attach-error"),
  announce,
  plain: (e) => {
    const err = asError(e);
    return plain(err.code, err.message);
  },
});
let uploading = false;

// sendComposer sends what the message box holds with the files attached,
// once their uploads are done; a file refused meanwhile keeps the message
// there (the refusal says why).
async function sendComposer(policy?: MultitaskPolicy): Promise<void> {
  if (els.input.value.trim() === "") {
    if (policy || files.count()) announce(files.count() ? "Write a message to send with the files." : "Write the message to send first.");
    return;
  }
  if (uploading) return;
  let sent: Sent[] = [];
  if (files.count()) {
    uploading = true;
    els.send.setAttribute("aria-disabled", "true");
    const ready = await files.ready();
    uploading = false;
    els.send.removeAttribute("aria-disabled");
    if (!ready || els.input.value.trim() === "") return;
    sent = ready;
  }
  const input = els.input.value;
  els.input.value = "";
  grow();
  files.clear();
  sendText(input, policy, sent);
}

els.form.addEventListener("submit", (ev) => {
  ev.preventDefault();
  void sendComposer();
});
els.interrupt.addEventListener("click", () => {
  els.input.focus();
  void sendComposer("interrupt");
});
els.stop.addEventListener("click", () => void stop());
els.input.addEventListener("keydown", (ev) => {
  if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) {
    ev.preventDefault();
    els.form.requestSubmit();
  }
});
function grow(): void {
  els.input.style.height = "auto";
  els.input.style.height = `${Math.min(els.input.scrollHeight + 2, 180)}px`;
}
els.input.addEventListener("input", grow);

els.who.textContent = identity.label;
if (identity.signOut) {
  const out = button("Sign out", "sign-out", "ghost link", "Sign out of this page");
  out.id = "sign-out";
  out.addEventListener("click", () => void identity.signOut?.());
  els.who.after(out);
}
// What is left of the user's quotas, when little is (usage.ts).
const usage = usageLine($("quota"), "/history/", identity.headers);

const side = sidebar({
  client,
  current: sessionId,
  unlisted,
  listed: (id) => {
    if (unlisted()?.id === id) setUnlisted(undefined);
  },
  newChat,
  href,
  announce,
  plain: (e) => {
    const err = asError(e);
    return plain(err.code, err.message);
  },
});
composerBusy();
void loadFirst().then(() => {
  if (!fresh) watch();
});
void usage();
els.input.focus();

