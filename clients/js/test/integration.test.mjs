// The client against the real dev server: every line of every stream it
// produces decodes, to the value the server wrote, and the Go decoder
// (turnctl validate) agrees line for line.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import {
  ConfirmationError, HTTPError, StreamDiagnosticError, TurnstreamClient, decodeTurnEvent, forkSession, pendingConfirmations, readTurn, selectTurn,
} from "../dist/turnstream.js";
import { startDevServer, turnctlBinary } from "./devserver.mjs";
import { lines } from "./helpers.mjs";

let srv;
const recorded = []; // the chunks of every NDJSON body the server sent

// recording is a fetch that keeps a copy of every turn stream's bytes.
async function recording(url, init) {
  const res = await fetch(url, init);
  if (!res.ok || !(res.headers.get("content-type") ?? "").startsWith("application/x-ndjson")) return res;
  const chunks = [];
  recorded.push(chunks);
  const tee = new TransformStream({
    transform(chunk, c) {
      chunks.push(chunk);
      c.enqueue(chunk);
    },
  });
  return new Response(res.body.pipeThrough(tee), { status: res.status, headers: res.headers });
}

const as = (user) =>
  new TurnstreamClient({ turnURL: srv.turnURL, historyURL: srv.historyURL, fetch: recording, headers: { Authorization: `Bearer dev.${user}` } });

async function drain(turn) {
  const seen = [];
  for await (const s of turn) seen.push(s);
  return seen;
}

before(async () => {
  srv = await startDevServer({ ECHO_DELAY: "100ms", ECHO_CHUNK_RUNES: "3", LEASE_DURATION: "3s", SNAPSHOT_INTERVAL: "5ms" });
});
after(async () => {
  await srv?.stop();
});

test("turns stream in, stop, history and errors against the dev server", async () => {
  const alice = as("alice");
  const caps = await alice.capabilities();
  assert.ok(caps.extensions.includes("stop") && caps.extensions.includes("history"));

  const first = await drain(alice.submit({ sessionId: "it-a", input: "hello there" }));
  const last = first.at(-1).payload;
  assert.equal(last.status, "complete");
  assert.equal(last.messages.at(-1).content, "Echo: hello there");
  assert.ok(first.length >= 2, "snapshots arrived while the answer streamed");

  const text = "héllo — 日本語 ✓ 𝄞😀 ok";
  const uni = await drain(alice.submit({ sessionId: "it-a", input: text, scope: "turn" }));
  assert.deepEqual(uni.at(-1).payload.messages.map((m) => m.content), [text, `Echo: ${text}`]);

  const note = await drain(alice.submit({ sessionId: "it-a", input: "/note Groceries: milk, eggs" }));
  const call = note.at(-1).payload.messages.at(-1).toolCalls[0];
  assert.equal(call.name, "workspace_note");
  assert.equal(call.status, "complete");

  // Stop mid-answer: the stream ends with the interrupted terminal snapshot.
  // About ten seconds of answer at this pace; a stop is seen within a lease renewal (1 s).
  const long = "please keep streaming for a good while now, this is a long answer to stop. ".repeat(4);
  const turn = alice.submit({ sessionId: "it-b", input: long, scope: "turn" });
  let stopped = false;
  const seen = [];
  for await (const s of turn) {
    seen.push(s);
    if (!stopped && s.payload.messages.at(-1)?.content.length > 8) {
      stopped = true;
      await turn.stop();
    }
  }
  const end = seen.at(-1).payload;
  assert.equal(end.status, "error");
  assert.equal(end.error.code, "TURN_INTERRUPTED");
  assert.ok(end.messages.at(-1).content.length < `Echo: ${long}`.length, "stopped before the end");

  // History pages back through all three turns of it-a.
  const ids = [];
  for await (const page of alice.pages("turns", "it-a", { limit: 2 })) {
    assert.ok(page.items.length <= 2);
    ids.push(...page.items.map((t) => t.turnId));
  }
  assert.equal(ids.length, 3);
  const notePage = await alice.turns("it-a", { limit: 1 });
  assert.deepEqual(notePage.items[0].artifacts, [{ entryPath: "notes/groceries.md", artifactType: "document" }]);
  const msgs = [];
  for await (const page of alice.pages("messages", "it-a", { limit: 2, order: "asc" })) msgs.push(...page.items);
  assert.equal(msgs[0].content, "hello there");

  // Another user's session: typed, not retryable, and in the same words everywhere.
  const bob = as("bob");
  await assert.rejects(bob.turns("it-a"), (e) => e instanceof HTTPError && e.status === 404 && e.code === "SESSION_NOT_FOUND" && !e.retryable);
  await assert.rejects(drain(bob.submit({ sessionId: "it-a", input: "hi" })), (e) => e.code === "SESSION_NOT_FOUND");

  // A second turn while one runs: SESSION_BUSY, retryable.
  const running = alice.submit({ sessionId: "it-c", input: long });
  const it = running[Symbol.asyncIterator]();
  await it.next();
  await assert.rejects(drain(alice.submit({ sessionId: "it-c", input: "me too" })), (e) => e.code === "SESSION_BUSY" && e.retryable);
  await running.stop();
  while (!(await it.next()).done);
});

test("approvals against the dev server: a waiting call, its decision, and the refusals", async () => {
  const ann = as("ann");
  await drain(ann.submit({ sessionId: "i-approve", input: "/note Shopping list: eggs", scope: "turn" }));
  const ask = await drain(ann.submit({ sessionId: "i-approve", input: "/delete Shopping list", scope: "turn" }));
  const done = ask.at(-1).payload;
  assert.equal(done.status, "complete", "waiting is not an error");
  const asst = done.messages.find((m) => m.role === "assistant");
  assert.equal(asst.toolCalls[0].status, "requires_confirmation");
  const [pc] = pendingConfirmations(asst);
  assert.equal(pc.action, "workspace_note_delete");
  assert.equal(pc.toolCallId, asst.toolCalls[0].id);
  // The history summary lists the same call.
  const { pendingInteractions } = await ann.session("i-approve");
  assert.equal(pendingInteractions.length, 1);
  assert.equal(pendingInteractions[0].interactionId, pc.token);
  assert.deepEqual(pendingInteractions[0].data.args, { title: "Shopping list" });
  // Someone else's decision is not found; an unknown token neither.
  await assert.rejects(drain(as("eve").decide({ sessionId: "i-approve", token: pc.token, decision: "approve" })), { code: "SESSION_NOT_FOUND" });
  await assert.rejects(drain(ann.decide({ sessionId: "i-approve", token: "cf00000000000000000000000000000000", decision: "approve" })), (e) =>
    e instanceof ConfirmationError && e.code === "CONFIRMATION_NOT_FOUND" && e.status === 404 && e.retryable === false);
  // Approve: the call runs, then the model answers.
  const cont = await drain(ann.decide({ sessionId: "i-approve", token: pc.token, decision: "approve", scope: "turn" }));
  const end = cont.at(-1).payload;
  assert.equal(end.status, "complete");
  const call = end.messages.find((m) => m.role === "assistant").toolCalls[0];
  assert.equal(call.status, "complete");
  assert.equal(call.result, 'Deleted note "notes/shopping-list.md".');
  assert.equal(end.messages.find((m) => m.role === "user").content, "Approved.");
  assert.deepEqual((await ann.session("i-approve")).pendingInteractions, []);
  // A second decision on it is refused for good.
  await assert.rejects(drain(ann.decide({ sessionId: "i-approve", token: pc.token, decision: "deny" })), (e) =>
    e instanceof ConfirmationError && e.code === "CONFIRMATION_DECIDED" && e.status === 409 && e.retryable === false);
  // The note is gone now: deleting it again says so instead of claiming a delete.
  const twice = (await drain(ann.submit({ sessionId: "i-approve", input: "/delete Shopping list", scope: "turn" }))).at(-1).payload;
  const [pc2] = pendingConfirmations(twice.messages.find((m) => m.role === "assistant"));
  const gone = (await drain(ann.decide({ sessionId: "i-approve", token: pc2.token, decision: "approve", scope: "turn" }))).at(-1).payload;
  const call2 = gone.messages.find((m) => m.role === "assistant").toolCalls[0];
  assert.equal(call2.status, "error");
  assert.equal(call2.error, 'There is no note "notes/shopping-list.md" in this conversation; nothing was deleted.');
  assert.equal(call2.result, undefined);
  // A plain turn supersedes a waiting call: deciding it later is too late.
  const again = (await drain(ann.submit({ sessionId: "i-approve", input: "/delete Trip plan" }))).at(-1).payload;
  const [late] = pendingConfirmations(again.messages.at(-1));
  await drain(ann.submit({ sessionId: "i-approve", input: "Never mind." }));
  await assert.rejects(drain(ann.decide({ sessionId: "i-approve", token: late.token, decision: "approve" })), (e) =>
    e instanceof ConfirmationError && e.code === "CONFIRMATION_EXPIRED" && e.status === 410 && e.retryable === false);
});

test("every recorded line decodes to what the server wrote, as the Go decoder decodes it", () => {
  const all = recorded.flatMap((chunks) => lines(Buffer.concat(chunks)));
  assert.ok(all.length > 20, `${all.length} lines recorded`);
  for (const line of all) {
    const r = decodeTurnEvent(line);
    assert.ok(r.ok, Buffer.from(line).toString());
    assert.deepEqual(JSON.parse(JSON.stringify(r.event)), JSON.parse(Buffer.from(line).toString("utf8")));
  }
  const out = spawnSync(turnctlBinary(), ["validate"], { input: Buffer.concat(all.flatMap((l) => [l, Buffer.from("\n")])) });
  assert.equal(out.status, 0, out.stderr.toString());
  const verdicts = out.stdout.toString().trim().split("\n").map((l) => JSON.parse(l));
  assert.equal(verdicts.length, all.length);
  verdicts.forEach((v, i) => assert.deepEqual(v, { ok: true, event: decodeTurnEvent(all[i]).event.event }));
});

test("multitask against the dev server: enqueue (followed to its end), cancel a queued turn, interrupt", async () => {
  const ann = as("ann");
  assert.deepEqual(await ann.multitaskPolicies(), ["reject", "enqueue", "interrupt", "rollback"]);
  const long = "a question long enough to keep the slowed echo model busy for a while";
  const a = ann.submit({ sessionId: "i-queue", input: long, scope: "turn" });
  const it = a[Symbol.asyncIterator]();
  await it.next(); // A runs
  const aRest = (async () => { while (!(await it.next()).done); })();
  const told = [];
  let bQueued;
  const bIn = new Promise((r) => (bQueued = r));
  const b = ann.submit({ sessionId: "i-queue", input: "then this one", scope: "turn", multitask: "enqueue", onQueued: (q) => { told.push(q); bQueued(); } });
  const bSeen = drain(b);
  await bIn; // B is queued before C is sent: the queue keeps submit order
  const c = ann.submit({ sessionId: "i-queue", input: "and this one, cancelled", scope: "turn", multitask: "enqueue" });
  const cDone = drain(c).then(() => "complete", (e) => e);
  // Both are queued before A ends: the summary lists them in order.
  let summary;
  do summary = await ann.session("i-queue");
  while (summary.queuedTurns.length < 2);
  assert.deepEqual(summary.queuedTurns.map((q) => [q.turnId, q.position, q.inputPreview]), [
    [b.turnId, 1, "then this one"],
    [c.turnId, 2, "and this one, cancelled"],
  ]);
  assert.deepEqual(await ann.stop("i-queue", c.turnId), { stopRequested: true, cancelled: true });
  const cEnd = await cDone;
  assert.ok(cEnd instanceof StreamDiagnosticError && cEnd.code === "TURN_CANCELLED", `the cancelled turn ends ${cEnd}`);
  await aRest;
  const bEnd = (await bSeen).at(-1).payload;
  assert.deepEqual(told.map((q) => [q.turnId, q.position]), [[b.turnId, 1]]);
  assert.equal(bEnd.status, "complete");
  assert.equal(bEnd.messages.at(-1).content, "Echo: then this one");
  // Interrupt: the running turn is stopped with its answer so far, the new one streams.
  const d = ann.submit({ sessionId: "i-queue", input: long, scope: "turn" });
  const dit = d[Symbol.asyncIterator]();
  await dit.next();
  const dRest = (async () => { let last; for (let r = await dit.next(); !r.done; r = await dit.next()) last = r.value; return last ?? d.snapshot; })();
  const e = await drain(ann.submit({ sessionId: "i-queue", input: "instead", scope: "turn", multitask: "interrupt" }));
  const dLast = await dRest;
  assert.equal(dLast.payload.status, "error");
  assert.equal(dLast.payload.error.code, "TURN_INTERRUPTED");
  assert.equal(e.at(-1).payload.messages.at(-1).content, "Echo: instead");
  const turns = (await ann.turns("i-queue", { order: "asc" })).items.map((t) => [t.turnId, t.status]);
  assert.deepEqual(turns.filter(([id]) => id !== c.turnId), [[a.turnId, "complete"], [b.turnId, "complete"], [d.turnId, "interrupted"], [turns.at(-1)[0], "complete"]]);
});

test("conversations against the dev server: the list with titles, a rename, a search, feedback", async () => {
  const cora = as("cora");
  await drain(cora.submit({ sessionId: "c-bread", input: "How long does\nsourdough proof?" }));
  await drain(cora.submit({ sessionId: "c-tax", input: "When are taxes due?" }));
  await drain(as("dan").submit({ sessionId: "c-dan", input: "dan's" }));
  const list = await cora.sessions();
  assert.deepEqual(list.sessions.map((s) => s.sessionId).sort(), ["c-bread", "c-tax"]);
  assert.equal(list.nextCursor, null);
  const bread = list.sessions.find((s) => s.sessionId === "c-bread");
  assert.equal(bread.title, "How long does sourdough proof?");
  assert.equal(bread.lastTurn.status, "complete");
  assert.ok(list.sessions[0].updatedAt >= list.sessions[1].updatedAt, "newest first");
  const page = await cora.sessions({ limit: 1 });
  assert.equal(page.sessions.length, 1);
  const rest = await cora.sessions({ limit: 1, cursor: page.nextCursor });
  assert.equal(rest.sessions.length, 1);
  assert.notEqual(rest.sessions[0].sessionId, page.sessions[0].sessionId);

  const renamed = await cora.renameSession("c-tax", "Tax deadlines");
  assert.equal(renamed.title, "Tax deadlines");
  assert.deepEqual((await cora.sessions({ q: "DEADLINE" })).sessions.map((s) => s.sessionId), ["c-tax"]);
  await assert.rejects(cora.renameSession("c-tax", "a\u202eb"), (e) => e instanceof HTTPError && e.status === 400 && e.diagnostic.code === "REQUEST_INVALID_BODY");
  await assert.rejects(as("dan").renameSession("c-tax", "mine"), (e) => e instanceof HTTPError && e.status === 404);

  const [turn] = (await cora.turns("c-bread")).items;
  const fb = await cora.setFeedback("c-bread", turn.turnId, { rating: "down", comment: "too vague" });
  assert.equal(fb.rating, "down");
  assert.equal(fb.comment, "too vague");
  assert.equal((await cora.turns("c-bread")).items[0].feedback.rating, "down");
  await assert.rejects(cora.setFeedback("c-bread", turn.turnId, { rating: "meh" }), (e) => e instanceof HTTPError && e.status === 400);
  assert.equal(await cora.setFeedback("c-bread", turn.turnId, null), null);
  assert.equal((await cora.turns("c-bread")).items[0].feedback, null);
});

test("branches against the dev server: siblings listed, a version read by id, a select, a fork", async () => {
  const eve = as("eve");
  await drain(eve.submit({ sessionId: "b-s", turnId: "b1", input: "first question" }));
  await drain(eve.submit({ sessionId: "b-s", turnId: "b2", input: "second question" }));
  const lineage = { operation: "regenerate", parentTurnId: "b2", sourceMessageId: "b2.a" };
  await drain(eve.submit({ sessionId: "b-s", turnId: "b3", input: "second question", lineage }));
  const active = async (sessionId) => (await eve.turns(sessionId, { order: "asc" })).items;
  let turns = await active("b-s");
  assert.deepEqual(turns.map((t) => t.turnId), ["b1", "b3"]);
  assert.equal(turns[0].siblings, undefined);
  assert.deepEqual(turns[1].siblings, { index: 1, count: 2, turnIds: ["b2", "b3"] });
  const off = await readTurn(eve, "b-s", "b2");
  assert.equal(off.superseded, true);
  assert.equal(off.messages.at(-1).content, "Echo: second question");

  await selectTurn(eve, "b-s", "b2");
  turns = await active("b-s");
  assert.deepEqual(turns.map((t) => t.turnId), ["b1", "b2"]);
  assert.equal(turns[1].siblings.index, 0);
  await assert.rejects(selectTurn(eve, "b-s", "b1x"), (e) => e instanceof HTTPError && e.status === 404 && e.diagnostic.code === "TURN_NOT_FOUND");
  await assert.rejects(selectTurn(as("fay"), "b-s", "b3"), (e) => e instanceof HTTPError && e.status === 404 && e.diagnostic.code === "SESSION_NOT_FOUND");

  const fork = await forkSession(eve, "b-s", { atTurnId: "b1" });
  assert.equal(fork.title, "Fork of first question");
  assert.deepEqual((await active(fork.sessionId)).map((t) => t.turnId), ["b1"]);
  const named = await forkSession(eve, "b-s", { atTurnId: "b2", sessionId: "b-fork", title: "Mine" });
  assert.equal(named.sessionId, "b-fork");
  await assert.rejects(forkSession(eve, "b-s", { atTurnId: "b1", sessionId: "b-fork" }), (e) => e instanceof HTTPError && e.status === 409 && e.diagnostic.code === "SESSION_CONFLICT");
  await assert.rejects(forkSession(eve, "b-s", { atTurnId: "b3" }), (e) => e instanceof HTTPError && e.status === 404 && e.diagnostic.code === "TURN_NOT_FOUND");
  await assert.rejects(forkSession(eve, "b-s", { atTurnId: "a b" }), TypeError);
});
