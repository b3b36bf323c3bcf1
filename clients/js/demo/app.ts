// The demo chat page the dev server serves at "/": the client from
// ../src driving a plain DOM renderer. Same origin as the dev server's
// /turn/ and /history/ mounts; no network beyond them.
//
// URL parameters: ?session=<SafeId> opens a conversation, ?user=<subject>
// sends "Authorization: Bearer dev.<subject>" (the dev server's dev auth).

import {
  newId,
  isSafeId,
  isConfirmationCode,
  pendingConfirmations,
  TurnstreamClient,
  TurnstreamError,
  type ArtifactReference,
  type Decision,
  type Message,
  type SnapshotEvent,
  type ToolCall,
  type Turn,
  type TurnDiagnostic,
  type TurnSummary,
} from "../src/index.js";
import { usageLine } from "./usage.js";

const PAGE = 10;

const $ = <T extends HTMLElement>(id: string): T => document.getElementById(id) as T;
const els = {
  status: $("status"),
  error: $("error"),
  log: $("log"),
  edge: $("history-edge"),
  turns: $("turns"),
  empty: $("empty"),
  form: $<HTMLFormElement>("composer"),
  input: $<HTMLTextAreaElement>("input"),
  send: $<HTMLButtonElement>("send"),
  sessions: $<HTMLSelectElement>("sessions"),
  newChat: $<HTMLButtonElement>("new-chat"),
  who: $("who"),
  seq: $("seq"),
};

const params = new URLSearchParams(location.search);
const user = params.get("user") ?? "";
const auth: Record<string, string> = isSafeId(user) ? { Authorization: `Bearer dev.${user}` } : {};
const client = new TurnstreamClient({
  turnURL: "/turn/",
  historyURL: "/history/",
  headers: auth,
  // The compact stream (docs/compact.md): text every 50 ms for a few
  // bytes more than the answer itself, instead of paced complete snapshots.
  compact: true,
});

// Sessions this browser started, newest first, per user.
interface Known {
  id: string;
  title: string;
}
const storeKey = `turnstream.sessions.${user || "local"}`;
function known(): Known[] {
  try {
    const v = JSON.parse(localStorage.getItem(storeKey) ?? "[]");
    return Array.isArray(v) ? v.filter((k) => isSafeId(k?.id) && typeof k.title === "string") : [];
  } catch {
    return [];
  }
}
function remember(id: string, title?: string): void {
  const list = known();
  const old = list.find((k) => k.id === id);
  const entry = { id, title: title ?? old?.title ?? "New conversation" };
  const next = [entry, ...list.filter((k) => k.id !== id)].slice(0, 20);
  try {
    localStorage.setItem(storeKey, JSON.stringify(next));
  } catch {
    /* private mode: the picker just forgets */
  }
}

// A session id from the link that this browser did not start may be
// someone else's (or nobody's yet): its "not found" is shown as an error.
let sessionId = params.get("session") ?? "";
if (!isSafeId(sessionId)) sessionId = "";
const fromLink = sessionId !== "" && !known().some((k) => k.id === sessionId);
if (sessionId === "") sessionId = known()[0]?.id ?? newId();
if (!fromLink) remember(sessionId);
setParam("session", sessionId);

function setParam(k: string, v: string): void {
  const u = new URL(location.href);
  u.searchParams.set(k, v);
  history.replaceState(null, "", u);
}

function renderPicker(): void {
  els.sessions.replaceChildren();
  const list = known();
  if (!list.some((k) => k.id === sessionId)) list.unshift({ id: sessionId, title: `Conversation ${sessionId.slice(0, 8)}` });
  for (const k of list) {
    const o = document.createElement("option");
    o.value = k.id;
    o.textContent = k.title;
    o.selected = k.id === sessionId;
    els.sessions.append(o);
  }
}
els.sessions.addEventListener("change", () => open(els.sessions.value));
els.newChat.addEventListener("click", () => {
  // Forget conversations that were started but never sent to.
  const sent = known().filter((k) => k.title !== "New conversation");
  try {
    localStorage.setItem(storeKey, JSON.stringify(sent));
  } catch {
    /* as in remember */
  }
  open(newId());
});
function open(id: string): void {
  const u = new URL(location.href);
  u.searchParams.set("session", id);
  if (!known().some((k) => k.id === id)) remember(id);
  location.assign(u);
}

// Status and errors, in plain words.

type State = "idle" | "loading" | "ready" | "streaming" | "stopped" | "error";
function status(state: State, text: string): void {
  els.status.dataset.state = state;
  els.status.querySelector(".text")!.textContent = text;
}

const PLAIN: Record<string, string> = {
  SESSION_NOT_FOUND: "This conversation can't be opened. It doesn't exist, or it belongs to another account.",
  SESSION_BUSY: "Another answer is still being written in this conversation. Wait for it to finish, then send again.",
  SESSION_CONFLICT: "Another answer is still being written in this conversation. Wait for it to finish, then send again.",
  REQUEST_UNAUTHENTICATED: "You're not signed in, so the server refused the request.",
  REQUEST_FORBIDDEN: "Your account may not do that.",
  REQUEST_TOO_LARGE: "That message is too long to send. Shorten it and try again.",
  NETWORK_FAILED: "The server can't be reached. Check that the dev server is still running, then try again.",
  STREAM_INCOMPLETE: "The connection dropped before the answer finished. Reload the page to see what was saved.",
  SERVER_TIMEOUT: "The answer took too long and was cut off.",
  SERVER_INTERNAL: "Something went wrong on the server. Try again in a moment.",
  RESPONSE_INVALID: "The server sent something this page doesn't understand.",
  TURN_INTERRUPTED: "Stopped.",
  TURN_LOST: "The server stopped while writing this answer. What it had written is saved.",
  TURN_OUTCOME_INDETERMINATE: "The server couldn't confirm this answer was saved. Reload the page in a moment to see how it ended.",
  MODEL_FAILED: "The model failed to answer. Try again.",
  CHAT_TURN_FAILED: "The answer failed. Try again.",
  CONFIRMATION_DECIDED: "This tool call was already approved or denied, perhaps in another window.",
  CONFIRMATION_EXPIRED: "It's too late to decide on this tool call: it waited too long, or a later message replaced it.",
  CONFIRMATION_NOT_FOUND: "This tool call is no longer waiting for a decision.",
  QUOTA_EXCEEDED: "You've reached a usage limit for now. Wait a little, then send again.",
  QUOTA_UNAVAILABLE: "The server can't check your usage limits right now. Try again in a moment.",
  LIMIT_EXCEEDED: "This answer stopped at a usage limit. What it wrote is kept.",
};
function plain(code: string, message: string): string {
  return PLAIN[code] ?? message;
}

function showError(e: unknown): void {
  if (!(e instanceof TurnstreamError)) {
    console.error(e);
    e = new TurnstreamError("CLIENT", "Something went wrong in this page.", false);
  }
  const err = e as TurnstreamError;
  els.error.replaceChildren(text("span", plain(err.code, err.message)), text("span", err.code, "code mono"));
  els.error.hidden = false;
  status("error", err.retryable ? "Error · try again" : "Error");
}
function clearError(): void {
  els.error.hidden = true;
  els.error.replaceChildren();
}

function text(tag: string, s: string, cls?: string): HTMLElement {
  const el = document.createElement(tag);
  el.textContent = s;
  if (cls) el.className = cls;
  return el;
}

// Rendering: one .turn element per turn, rebuilt from each complete snapshot.

function renderTurn(el: HTMLElement, messages: readonly Message[], opts: { error?: TurnDiagnostic | null; artifacts?: readonly ArtifactReference[] }): void {
  const kids: HTMLElement[] = [];
  for (const m of messages) {
    if (m.role !== "user" && m.role !== "assistant") continue; // tool results show in their call
    const b = document.createElement("div");
    b.className = "msg";
    b.dataset.role = m.role;
    b.dataset.status = m.status;
    b.dataset.id = m.id;
    const calls = m.toolCalls ?? [];
    b.dataset.hasTools = String(calls.length > 0);
    for (const c of calls) b.append(renderToolCall(c));
    b.append(text("div", m.content, "text"));
    kids.push(b);
  }
  const host = [...kids].reverse().find((k) => k.dataset.role === "assistant") ?? kids[kids.length - 1];
  if (host && opts.artifacts?.length) host.append(renderArtifacts(opts.artifacts));
  if (host && opts.error) host.append(text("div", plain(opts.error.code, opts.error.message), opts.error.code === "TURN_INTERRUPTED" ? "notice" : "notice fail"));
  el.replaceChildren(...kids);
}

// Tool calls waiting for the user's approval: toolCallId -> the
// confirmation's token, from the finished turn's pendingConfirmations or
// the history summary's pendingInteractions. A later turn (a message, a
// decision) supersedes them all.
const waiting = new Map<string, string>();
// The decision being sent, while it is in flight.
let deciding = false;
// Decided calls: toolCallId -> the decision, from the continuations'
// metadata.confirmation; the asking turn's call stays
// requires_confirmation in its record, so the page says what became of it.
const decided = new Map<string, Decision>();

// noteDecisions records the decisions the messages carry and marks the
// calls they decided wherever they are shown.
function noteDecisions(messages: readonly Message[]): void {
  for (const m of messages) {
    const c = m.metadata?.confirmation;
    if (typeof c !== "object" || c === null || Array.isArray(c)) continue;
    const id = c.toolCallId;
    const d = c.decision;
    if (typeof id !== "string" || (d !== "approve" && d !== "deny")) continue;
    decided.set(id, d);
    for (const box of document.querySelectorAll<HTMLElement>(`.tool[data-call="${CSS.escape(id)}"]`)) markDecided(box, d);
  }
}

function markDecided(box: HTMLElement, d: Decision): void {
  if (box.dataset.status !== "requires_confirmation" || box.querySelector(".decided")) return;
  box.append(text("div", d === "approve" ? "You approved this call; its result is below." : "You denied this call.", "decided"));
}

function renderToolCall(c: ToolCall): HTMLElement {
  const box = document.createElement("div");
  box.className = "tool";
  box.dataset.tool = c.name;
  box.dataset.call = c.id;
  box.dataset.status = c.status;
  const head = document.createElement("div");
  head.className = "head";
  head.append(text("span", "Tool", ""), text("span", c.name, "name"));
  const badge = text("span", c.status.replace("_", " "), "badge");
  badge.dataset.status = c.status;
  head.append(badge);
  box.append(head);
  const dl = document.createElement("dl");
  for (const [k, v] of Object.entries(c.args)) dl.append(text("dt", k), text("dd", typeof v === "string" ? v : JSON.stringify(v)));
  if (dl.childElementCount) box.append(dl);
  if (c.result !== undefined) box.append(text("div", c.result, "result"));
  if (c.error !== undefined) box.append(text("div", c.error, "notice fail"));
  const token = c.status === "requires_confirmation" ? waiting.get(c.id) : undefined;
  if (token !== undefined) box.append(renderDecision(c, token));
  const d = decided.get(c.id);
  if (d !== undefined) markDecided(box, d);
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
    const b = text("button", label, d === "approve" ? "primary" : "ghost") as HTMLButtonElement;
    b.type = "button";
    b.dataset.decision = d;
    b.setAttribute("aria-label", `${label} ${c.name}`);
    b.disabled = deciding || current !== undefined;
    b.addEventListener("click", () => void decide(token, d));
    row.append(b);
  }
  return row;
}

function decisionButtons(disabled: boolean): void {
  for (const b of document.querySelectorAll<HTMLButtonElement>(".decision button")) b.disabled = disabled;
}

// settle forgets waiting calls (all of them, or one token's) and takes
// their buttons away, leaving note in their place when given.
function settle(token?: string, note?: string): void {
  for (const row of document.querySelectorAll<HTMLElement>(".decision")) {
    if (token !== undefined && row.dataset.token !== token) continue;
    if (note) row.replaceWith(text("div", note, "notice"));
    else row.remove();
  }
  if (token === undefined) waiting.clear();
  else for (const [id, t] of waiting) if (t === token) waiting.delete(id);
}

// decide sends the decision on a waiting call and streams the
// continuation turn (the tool's result or the denial, then the answer).
async function decide(token: string, decision: Decision): Promise<void> {
  if (deciding || current) return;
  deciding = true;
  decisionButtons(true);
  clearError();
  const turn = client.decide({ sessionId, token, decision, scope: "turn" });
  const el = turnElement(turn.turnId);
  els.turns.append(el);
  toBottom();
  const failed = await stream(turn, el, () => settle());
  deciding = false;
  if (isConfirmationCode((failed as TurnstreamError | undefined)?.code ?? "")) {
    const err = failed as TurnstreamError;
    settle(token, plain(err.code, err.message));
  } else {
    decisionButtons(false);
  }
}

function renderArtifacts(list: readonly ArtifactReference[]): HTMLElement {
  const row = document.createElement("div");
  row.className = "artifacts";
  row.setAttribute("aria-label", "Artifacts");
  for (const a of list) {
    const chip = document.createElement("span");
    chip.className = "artifact";
    chip.dataset.path = a.entryPath;
    const icon = document.createElement("span");
    icon.className = "icon";
    chip.append(icon, text("span", a.entryPath, "mono"), text("span", a.artifactType, "kind"));
    row.append(chip);
  }
  return row;
}

function turnElement(id: string): HTMLElement {
  const el = document.createElement("section");
  el.className = "turn";
  el.dataset.turn = id;
  return el;
}

function nearBottom(): boolean {
  const l = els.log;
  return l.scrollHeight - l.scrollTop - l.clientHeight < 80;
}
function toBottom(): void {
  els.log.scrollTop = els.log.scrollHeight;
}

// History: the newest page first, older pages as the reader scrolls up.

let older: string | null = null;
let loadingOlder = false;

function edge(state: "more" | "loading" | "start" | "none"): void {
  els.edge.dataset.state = state;
  els.edge.replaceChildren();
  if (state === "loading") els.edge.textContent = "Loading earlier messages…";
  if (state === "start") els.edge.textContent = "Beginning of the conversation";
  if (state === "more") {
    const b = text("button", "Load earlier messages", "ghost");
    b.addEventListener("click", loadOlder);
    els.edge.append(b);
  }
}

function prependTurns(turns: readonly TurnSummary[]): void {
  // Pages are newest first; the log reads oldest first.
  for (const t of turns) noteDecisions(t.messages);
  const frag = document.createDocumentFragment();
  for (const t of [...turns].reverse()) {
    const el = turnElement(t.turnId);
    renderTurn(el, t.messages, { error: t.error, artifacts: t.artifacts });
    frag.append(el);
  }
  els.turns.prepend(frag);
}

// nameFrom names the conversation in the picker after its first message,
// once the oldest page is known; until then after its id.
function nameFrom(newestFirst: readonly TurnSummary[], hasMore: boolean): void {
  const first = newestFirst[newestFirst.length - 1]?.messages[0];
  if (!hasMore && first) remember(sessionId, title(first.content));
  else if (!known().some((k) => k.id === sessionId)) remember(sessionId, `Conversation ${sessionId.slice(0, 8)}`);
  renderPicker();
}

async function loadFirst(): Promise<void> {
  status("loading", "Loading…");
  try {
    const pending = client.session(sessionId).then(
      (s) => s.pendingInteractions,
      () => [], // no buttons then; the turns' own errors are shown below
    );
    const page = await client.turns(sessionId, { limit: PAGE, order: "desc" });
    for (const p of await pending) waiting.set(p.data.toolCallId, p.interactionId);
    prependTurns(page.items);
    older = page.nextCursor;
    edge(page.hasMore ? "more" : page.items.length ? "start" : "none");
    els.empty.hidden = page.items.length > 0;
    toBottom();
    if (page.items.length) nameFrom(page.items, page.hasMore);
    status("ready", "Ready");
    void watchRunning(page.items[0]?.status === "running");
  } catch (e) {
    if (e instanceof TurnstreamError && e.code === "SESSION_NOT_FOUND" && !fromLink) {
      // A conversation this browser started but never sent to.
      edge("none");
      els.empty.hidden = false;
      status("ready", "Ready");
      return;
    }
    edge("none");
    showError(e);
  }
  renderPicker();
}

// watchRunning handles a page opened while a turn of this session is
// still running (a reload mid-answer, a second tab). When the server
// offers resume, the page reads that turn's stream from the sequence
// history has saved, so the answer goes on growing here; otherwise it says
// so and adds the turn once history has it. shownRunning: the newest turn
// of the page is one history listed as still running.
async function watchRunning(shownRunning: boolean): Promise<void> {
  try {
    const summary = await client.session(sessionId);
    const run = summary.currentTurn;
    // It ended since the page was read: show it as saved.
    if (!run && shownRunning) return await showNewest();
    if (run && !current && isSafeId(run.turnId) && (await client.canResume())) {
      // History shows the running turn as of its last checkpoint, at
      // run.sequence: continue after it. A page without it starts from the
      // turn's newest state.
      const shown = els.turns.querySelector(`[data-turn="${run.turnId}"]`) !== null;
      const after = shown && Number.isSafeInteger(run.sequence) && run.sequence! >= 0 ? run.sequence : undefined;
      await follow(client.resume({ sessionId, turnId: run.turnId, after, scope: "turn" }));
      return;
    }
  } catch {
    /* no resume here: fall back to waiting for history */
  }
  let running = false;
  const note = text("p", "An answer is being written in another window. It appears here when it is finished.", "elsewhere");
  for (;;) {
    let summary;
    try {
      summary = await client.session(sessionId);
    } catch {
      note.remove();
      return; // the conversation itself is shown; this is only a notice
    }
    if (summary.currentTurn === null) break;
    if (!running && !current) {
      els.empty.hidden = true;
      els.turns.append(note);
      toBottom();
    }
    running = true;
    if (!current) status("streaming", "An answer is being written…");
    await new Promise((r) => setTimeout(r, 1000));
  }
  note.remove();
  if ((!running && !shownRunning) || current) return;
  await showNewest();
}

// showNewest shows the newest turn as history has it: in its element when
// the page shows it already (as it was while running), else at the end.
async function showNewest(): Promise<void> {
  try {
    const page = await client.turns(sessionId, { limit: 1, order: "desc" });
    const t = page.items[0];
    if (t) {
      let el = els.turns.querySelector<HTMLElement>(`[data-turn="${t.turnId}"]`);
      if (!el) {
        el = turnElement(t.turnId);
        els.turns.append(el);
      }
      renderTurn(el, t.messages, { error: t.error, artifacts: t.artifacts });
      els.empty.hidden = true;
      toBottom();
    }
    status("ready", "Ready");
  } catch (e) {
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
    nameFrom(page.items, page.hasMore);
  } catch (e) {
    edge("more");
    showError(e);
  } finally {
    loadingOlder = false;
  }
}

els.log.addEventListener("scroll", () => {
  if (els.log.scrollTop < 120) void loadOlder();
});

// Sending, streaming and stopping.

let current: Turn | undefined;
let stopping = false;

function title(s: string): string {
  const t = s.trim().replace(/\s+/g, " ");
  return t.length > 48 ? t.slice(0, 47) + "…" : t || "New conversation";
}

function composerBusy(busy: boolean): void {
  els.send.textContent = busy ? "Stop" : "Send";
  els.send.classList.toggle("stop", busy);
  els.send.type = busy ? "button" : "submit";
  els.send.disabled = false;
  els.send.setAttribute("aria-label", busy ? "Stop the answer" : "Send the message");
}

async function send(input: string): Promise<void> {
  clearError();
  els.empty.hidden = true;
  const turn = client.submit({ sessionId, input, scope: "turn" });
  decisionButtons(true);
  const el = turnElement(turn.turnId);
  // Show the message at once; the first snapshot replaces it.
  renderTurn(el, [{ id: "pending", role: "user", content: input, status: "complete", createdAt: new Date().toISOString() }], {});
  els.turns.append(el);
  toBottom();
  await stream(turn, el, () => {
    settle(); // a new turn supersedes the calls that waited
    // The server took the turn: the conversation is this user's.
    const entry = known().find((k) => k.id === sessionId);
    remember(sessionId, !entry || entry.title === "New conversation" ? title(input) : undefined);
  });
}

// follow shows a turn that was running when the page opened (resumed):
// in the element history rendered for it, or a new one at the end.
async function follow(turn: Turn): Promise<void> {
  let el = els.turns.querySelector<HTMLElement>(`[data-turn="${turn.turnId}"]`);
  if (!el) {
    el = turnElement(turn.turnId);
    els.turns.append(el);
  }
  els.empty.hidden = true;
  toBottom();
  await stream(turn, el, () => {});
  // It ended before its stream opened: show what history saved.
  if (!turn.snapshot) await showNewest();
}

// stream renders each snapshot of turn into el until its terminal one;
// first runs on the first snapshot. When it fails before any snapshot, el
// is removed. It returns the error it showed, if any. A turn that ends
// with calls waiting for approval shows their buttons.
async function stream(turn: Turn, el: HTMLElement, first: () => void): Promise<unknown> {
  current = turn;
  stopping = false;
  composerBusy(true);
  status("streaming", "Sending…");
  let last: SnapshotEvent | undefined;
  try {
    for await (const snap of turn) {
      if (!last) first();
      last = snap;
      if (snap.payload.status === "complete") {
        for (const m of snap.payload.messages) for (const c of pendingConfirmations(m)) waiting.set(c.toolCallId, c.token);
      }
      noteDecisions(snap.payload.messages);
      const stick = nearBottom();
      renderTurn(el, snap.payload.messages, { error: snap.payload.error });
      if (stick) toBottom();
      els.seq.textContent = `sequence ${snap.sequence}`;
      if (snap.payload.status === "streaming") status("streaming", stopping ? "Stopping…" : "Answering…");
    }
    const p = last?.payload;
    if (p?.status === "error" && p.error?.code === "TURN_INTERRUPTED") status("stopped", "Stopped");
    else if (p?.status === "error") status("error", "The answer failed");
    else status("ready", "Ready");
    if (p && p.messages.some((m) => m.toolCalls?.length)) await showArtifacts(el, turn.turnId, p.messages);
  } catch (e) {
    if (last) renderTurn(el, last.payload.messages, {});
    else el.remove();
    showError(e);
    return e;
  } finally {
    current = undefined;
    void usage(); // what is left after this turn, or after a refusal
    composerBusy(false);
    if (!deciding) decisionButtons(false);
    renderPicker();
  }
  return undefined;
}

// The live stream shows tool calls; the artifact references the turn
// recorded come from history once it has been saved.
async function showArtifacts(el: HTMLElement, turnId: string, messages: readonly Message[]): Promise<void> {
  try {
    const page = await client.turns(sessionId, { limit: 1, order: "desc" });
    const t = page.items[0];
    if (t?.turnId === turnId && t.artifacts.length) renderTurn(el, messages, { artifacts: t.artifacts, error: t.error });
  } catch {
    /* artifacts are a bonus here: the answer itself is shown */
  }
}

async function stop(): Promise<void> {
  if (!current || stopping) return;
  stopping = true;
  els.send.disabled = true;
  status("streaming", "Stopping…");
  try {
    await current.stop();
  } catch (e) {
    if (!(e instanceof TurnstreamError && e.code === "TURN_NOT_ACTIVE")) showError(e);
  }
}

els.form.addEventListener("submit", (ev) => {
  ev.preventDefault();
  if (current) return;
  const input = els.input.value;
  if (input.trim() === "") return;
  els.input.value = "";
  grow();
  void send(input);
});
els.send.addEventListener("click", () => {
  if (current) void stop();
});
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

els.who.textContent = `signed in as ${isSafeId(user) ? user : "local"} (dev auth)`;
// What is left of the user's quotas, when little is (usage.ts).
const usage = usageLine($("usage"), "/history/", auth);

renderPicker();
void loadFirst();
void usage();
els.input.focus();
