// The client against a scripted fetch: error bodies, abort, stop, history
// paging, capabilities, the cursor, and resume from the last sequence.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import {
  HTTPError,
  SnapshotCursor,
  StreamDiagnosticError,
  StreamIncompleteError,
  TurnstreamClient,
  TurnstreamError,
  decodeTurnEvent,
  exportSession,
  eraseSessions,
  reasoning,
} from "../dist/turnstream.js";
import { jsonResponse, lines, ndjsonResponse, testdata } from "./helpers.mjs";

const plain = new Uint8Array(readFileSync(join(testdata, "streams/plain.ndjson")));
const plainLines = lines(plain);
const { sessionId, turnId } = decodeTurnEvent(plainLines[0]).event;
const nl = Uint8Array.of(0x0a);
const withLF = (ls) => ls.flatMap((l) => [l, nl]);

// scripted returns a fetch answering each call with the next function's
// response, recording the requests.
function scripted(...answers) {
  const calls = [];
  const fetch = async (url, init) => {
    calls.push({ url, init });
    const a = answers.shift();
    if (!a) throw new Error(`unexpected request ${url}`);
    return a(url, init);
  };
  return { fetch, calls };
}

async function drain(turn) {
  const seen = [];
  for await (const s of turn) seen.push(s);
  return seen;
}

test("submit posts one client.turn.submit event with the scope header", async () => {
  const f = scripted(() => ndjsonResponse([plain]));
  const c = new TurnstreamClient({ turnURL: "http://x.test/turn", fetch: f.fetch, headers: () => ({ Authorization: "Bearer dev.alice" }) });
  const seen = await drain(c.submit({ sessionId, turnId, input: "hello there", scope: "turn" }));
  assert.equal(seen.length, plainLines.length);
  const { url, init } = f.calls[0];
  assert.equal(url, "http://x.test/turn/");
  assert.equal(init.method, "POST");
  assert.equal(init.headers["Content-Type"], "application/json");
  assert.equal(init.headers["X-Turnstream-Snapshot-Scope"], "turn");
  assert.equal(init.headers.Authorization, "Bearer dev.alice");
  const ev = decodeTurnEvent(init.body);
  assert.ok(ev.ok);
  assert.equal(ev.event.event, "client.turn.submit");
  assert.deepEqual(ev.event.payload, { input: "hello there" });
  assert.equal(ev.event.turnId, turnId);
});

test("error bodies become typed errors with retryable", async () => {
  const cases = [
    [409, { error: { version: 1, code: "SESSION_BUSY", message: "Another turn is active for this session.", retryable: true } }, "SESSION_BUSY", true],
    [404, { error: { version: 1, code: "SESSION_NOT_FOUND", message: "Session not found.", retryable: false } }, "SESSION_NOT_FOUND", false],
    [502, "<html>bad gateway</html>", "RESPONSE_INVALID", true],
    [400, '{"error":{"version":1,"code":"X","code":"Y","message":"m","retryable":false}}', "RESPONSE_INVALID", false],
    [403, { error: { version: 1, code: "lower", message: "m", retryable: false } }, "RESPONSE_INVALID", false],
  ];
  for (const [status, body, code, retryable] of cases) {
    const c = new TurnstreamClient({ turnURL: "http://x.test/", fetch: scripted(() => jsonResponse(status, body)).fetch });
    await assert.rejects(drain(c.submit({ sessionId, input: "hi" })), (e) => {
      assert.ok(e instanceof HTTPError && e instanceof TurnstreamError);
      assert.equal(e.status, status);
      assert.equal(e.code, code);
      assert.equal(e.retryable, retryable);
      assert.ok(!e.message.includes("bad gateway"));
      return true;
    });
  }
});

test("an unreachable server is NETWORK_FAILED; a non-NDJSON 200 is RESPONSE_INVALID", async () => {
  const down = new TurnstreamClient({ turnURL: "http://x.test/", fetch: async () => { throw new TypeError("fetch failed: ECONNREFUSED secret"); } });
  await assert.rejects(drain(down.submit({ sessionId, input: "hi" })), (e) => e.code === "NETWORK_FAILED" && e.retryable && !e.message.includes("secret"));
  const html = new TurnstreamClient({ turnURL: "http://x.test/", fetch: async () => new Response("<html>", { headers: { "content-type": "text/html" } }) });
  await assert.rejects(drain(html.submit({ sessionId, input: "hi" })), (e) => e.code === "RESPONSE_INVALID");
});

test("a diagnostic line ends the turn with StreamDiagnosticError", async () => {
  const diag = `{"protocol":"agentskit.chat.turn","version":1,"eventId":"d1","sessionId":"${sessionId}","turnId":"${turnId}","sequence":99,"emittedAt":"2026-07-11T03:00:00.000Z","event":"server.turn.diagnostic","payload":{"version":1,"code":"SERVER_TIMEOUT","message":"The chat request timed out.","retryable":true}}\n`;
  const c = new TurnstreamClient({ turnURL: "http://x.test/", resume: "off", fetch: scripted(() => ndjsonResponse([...withLF(plainLines.slice(0, 2)), new TextEncoder().encode(diag)])).fetch });
  const seen = [];
  await assert.rejects(
    (async () => { for await (const s of c.submit({ sessionId, turnId, input: "x" })) seen.push(s); })(),
    (e) => e instanceof StreamDiagnosticError && e.code === "SERVER_TIMEOUT" && e.retryable,
  );
  assert.equal(seen.length, 2);
});

test("invalid lines are skipped and reported; an early end is StreamIncompleteError", async () => {
  const bad = [new TextEncoder().encode('{"protocol":"agentskit.chat.turn","version":1,"a":1,"a":2}'), nl, Uint8Array.of(0xff, 0xfe), nl];
  const reported = [];
  const c = new TurnstreamClient({ turnURL: "http://x.test/", resume: "off", fetch: scripted(() => ndjsonResponse([...withLF(plainLines.slice(0, 3)), ...bad])).fetch });
  const turn = c.submit({ sessionId, turnId, input: "x", onInvalidLine: (d) => reported.push(d) });
  await assert.rejects(drain(turn), (e) => {
    assert.ok(e instanceof StreamIncompleteError);
    assert.equal(e.retryable, true);
    assert.equal(e.sequence, decodeTurnEvent(plainLines[2]).event.sequence);
    assert.equal(e.invalidLines.length, 2);
    return true;
  });
  assert.deepEqual(reported.map((d) => d.message), ["Turn event is not valid JSON.", "Turn event is not valid JSON."]);
});

test("AbortSignal cancels the request and the stream", async () => {
  const ac = new AbortController();
  let ctrl;
  const body = new ReadableStream({ start(c) { ctrl = c; c.enqueue(plainLines[0]); c.enqueue(nl); } });
  let sawSignal = false;
  const fetch = async (_url, init) => {
    // As fetch does: an abort errors the response body.
    sawSignal = init.signal === ac.signal;
    init.signal.addEventListener("abort", () => ctrl.error(init.signal.reason));
    return new Response(body, { headers: { "content-type": "application/x-ndjson" } });
  };
  const c = new TurnstreamClient({ turnURL: "http://x.test/", resume: "off", fetch });
  const turn = c.submit({ sessionId, turnId, input: "x", signal: ac.signal });
  const it = turn[Symbol.asyncIterator]();
  assert.equal((await it.next()).value.sequence, decodeTurnEvent(plainLines[0]).event.sequence);
  const pending = it.next();
  ac.abort();
  await assert.rejects(pending, (e) => e.name === "AbortError");
  assert.ok(sawSignal, "the request carries the caller's signal");
  // Aborted before sending: fetch rejects with the signal's reason.
  const early = new TurnstreamClient({ turnURL: "http://x.test/", fetch: async (_u, init) => { init.signal.throwIfAborted(); } });
  await assert.rejects(drain(early.submit({ sessionId, input: "x", signal: AbortSignal.abort() })), (e) => e.name === "AbortError");
});

test("stop posts {sessionId, turnId} to {turnURL}stop", async () => {
  const f = scripted(() => new Response(null, { status: 204 }), () => jsonResponse(409, { error: { version: 1, code: "TURN_NOT_ACTIVE", message: "The turn is not running.", retryable: false } }));
  const c = new TurnstreamClient({ turnURL: "http://x.test/turn/", fetch: f.fetch });
  await c.stop("s-1", "t-1");
  assert.equal(f.calls[0].url, "http://x.test/turn/stop");
  assert.deepEqual(JSON.parse(f.calls[0].init.body), { sessionId: "s-1", turnId: "t-1" });
  await assert.rejects(c.submit({ sessionId: "s-1", turnId: "t-1", input: "x" }).stop(), (e) => e.code === "TURN_NOT_ACTIVE" && !e.retryable);
});

test("history pages follow their cursors", async () => {
  const msg = (id) => ({ id, role: "user", content: id, status: "complete", createdAt: "2026-07-11T03:00:00.000Z" });
  const turn = (id) => ({ turnId: id, ordinal: 1, status: "complete", lineage: { operation: "submit" }, messages: [msg(`${id}.u`)], artifacts: [], error: null, usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 }, startedAt: "2026-07-11T03:00:00.000Z", completedAt: null });
  const f = scripted(
    () => jsonResponse(200, { turns: [turn("t3"), turn("t2")], nextCursor: "c/1+", hasMore: true }),
    () => jsonResponse(200, { turns: [turn("t1")], nextCursor: null, hasMore: false }),
    () => jsonResponse(200, { messages: [msg("m1")], nextCursor: null, hasMore: false }),
    () => jsonResponse(200, { sessionId: "s-1", cursor: 4, currentTurn: null }),
    () => jsonResponse(200, { messages: [{ ...msg("m1"), createdAt: "2026-02-30T00:00:00.000Z" }], nextCursor: null, hasMore: false }),
  );
  const c = new TurnstreamClient({ turnURL: "http://x.test/turn/", historyURL: "http://x.test/history", fetch: f.fetch });
  const ids = [];
  for await (const page of c.pages("turns", "s-1", { limit: 2 })) ids.push(...page.items.map((t) => t.turnId));
  assert.deepEqual(ids, ["t3", "t2", "t1"]);
  assert.equal(f.calls[0].url, "http://x.test/history/sessions/s-1/turns?limit=2");
  assert.equal(f.calls[1].url, "http://x.test/history/sessions/s-1/turns?limit=2&cursor=c%2F1%2B");
  const page = await c.messages("s-1", { order: "asc" });
  assert.equal(f.calls[2].url, "http://x.test/history/sessions/s-1/messages?order=asc");
  assert.equal(page.items[0].id, "m1");
  assert.equal((await c.session("s-1")).cursor, 4);
  assert.equal(f.calls[3].url, "http://x.test/history/sessions/s-1");
  await assert.rejects(c.messages("s-1"), (e) => e.code === "RESPONSE_INVALID");
  await assert.rejects(c.messages("not a safe id"), TypeError);
});

test("deleteSession: 204 is done, 202 asks again, 404 is already gone, 409 throws SESSION_BUSY", async () => {
  const gone = () => new Response(null, { status: 204 });
  const more = () => jsonResponse(202, { status: "deleting" });
  const err = (status, code, message, retryable) => () => jsonResponse(status, { error: { version: 1, code, message, retryable } });
  const client = (f) => new TurnstreamClient({ turnURL: "http://x.test/turn/", historyURL: "http://x.test/history", fetch: f.fetch, headers: { Authorization: "Bearer dev.alice" } });

  // 204 at once: one request.
  let f = scripted(gone);
  assert.equal(await client(f).deleteSession("s-1"), undefined);
  assert.equal(f.calls.length, 1);
  assert.equal(f.calls[0].url, "http://x.test/history/sessions/s-1");
  assert.equal(f.calls[0].init.method, "DELETE");
  assert.equal(f.calls[0].init.headers.Authorization, "Bearer dev.alice");
  assert.equal(f.calls[0].init.body, undefined);

  // 202 twice, then 204: three requests, the same each time.
  f = scripted(more, more, gone);
  await client(f).deleteSession("s-1");
  assert.deepEqual(f.calls.map((c) => `${c.init.method} ${c.url}`), Array(3).fill("DELETE http://x.test/history/sessions/s-1"));

  // 404 SESSION_NOT_FOUND: nothing of it is the caller's any more.
  f = scripted(err(404, "SESSION_NOT_FOUND", "Session not found.", false));
  await client(f).deleteSession("s-1");
  assert.equal(f.calls.length, 1);
  // ... also after a 202 (another window finished it).
  f = scripted(more, err(404, "SESSION_NOT_FOUND", "Session not found.", false));
  await client(f).deleteSession("s-1");
  assert.equal(f.calls.length, 2);

  // 409 SESSION_BUSY: a turn runs; the typed error, retryable, no second request.
  f = scripted(err(409, "SESSION_BUSY", "Another turn is active for this session.", true));
  await assert.rejects(client(f).deleteSession("s-1"), (e) => {
    assert.ok(e instanceof HTTPError);
    assert.equal(e.status, 409);
    assert.equal(e.code, "SESSION_BUSY");
    assert.equal(e.retryable, true);
    return true;
  });
  assert.equal(f.calls.length, 1);

  // Another 404 (a server without the route) is no success.
  f = scripted(err(404, "REQUEST_NOT_FOUND", "Not found.", false));
  await assert.rejects(client(f).deleteSession("s-1"), (e) => e instanceof HTTPError && e.code === "REQUEST_NOT_FOUND");
  // A 202 that is not {"status":"deleting"}, or a 200, is not the protocol.
  f = scripted(() => jsonResponse(202, { status: "queued" }));
  await assert.rejects(client(f).deleteSession("s-1"), (e) => e.code === "RESPONSE_INVALID" && !e.retryable);
  f = scripted(() => jsonResponse(200, {}));
  await assert.rejects(client(f).deleteSession("s-1"), (e) => e.code === "RESPONSE_INVALID");
  // Bounded: after 100 answers of 202 it stops asking, retryable.
  f = scripted(...Array(101).fill(more));
  await assert.rejects(client(f).deleteSession("s-1"), (e) => e.code === "RESPONSE_INVALID" && e.retryable);
  assert.equal(f.calls.length, 100);
  await assert.rejects(client(scripted()).deleteSession("not a safe id"), TypeError);
});

test("SnapshotCursor accepts only strictly newer snapshots of its session", () => {
  const evs = plainLines.map((l) => Buffer.from(l).toString("utf8"));
  const cur = new SnapshotCursor(sessionId);
  assert.equal(cur.apply(evs[1]), true);
  assert.equal(cur.apply(evs[1]), false, "equal sequence");
  assert.equal(cur.apply(evs[0]), false, "older");
  assert.equal(cur.apply(evs[1].replace(`"sessionId":"${sessionId}"`, '"sessionId":"other"').replace('"sequence":', '"sequence":1000')), false, "foreign session");
  assert.equal(cur.apply("{"), false, "malformed");
  assert.equal(cur.apply(evs[2]), true);
  assert.ok(Object.isFrozen(cur.snapshot.payload.messages[0]));
  // Objects are validated too: a forged "snapshot" is not held.
  const forged = JSON.parse(evs[3]);
  forged.payload.status = "done";
  assert.equal(cur.apply(forged), false);
  const cycle = JSON.parse(evs[3]);
  cycle.self = cycle;
  assert.equal(cur.apply(cycle), false);
  assert.equal(cur.apply(JSON.parse(evs[3])), true, "a valid plain object is decoded and held");
  assert.ok(Object.isFrozen(cur.snapshot.payload.usage));
  assert.throws(() => new SnapshotCursor("bad id"), TypeError);
});

test("capabilities advertising resume: a dropped stream continues after the last sequence", async () => {
  const caps = { protocols: [{ protocol: "agentskit.chat.turn", versions: [1] }], extensions: ["stop", "resume"] };
  const cut = 3; // the first stream drops after three lines and half of the fourth
  const half = plainLines[cut].subarray(0, 20);
  const f = scripted(
    () => ndjsonResponse([...withLF(plainLines.slice(0, cut)), half]),
    () => jsonResponse(200, caps),
    // The resumed stream repeats the newest state first, then continues.
    () => ndjsonResponse(withLF(plainLines.slice(cut - 1))),
  );
  const c = new TurnstreamClient({ turnURL: "http://x.test/turn/", fetch: f.fetch });
  const turn = c.submit({ sessionId, turnId, input: "x", scope: "turn" });
  const seqs = (await drain(turn)).map((s) => s.sequence);
  const want = plainLines.map((l) => decodeTurnEvent(l).event.sequence);
  assert.deepEqual(seqs, want, "each snapshot once, in order, the terminal one last");
  assert.equal(f.calls[1].url, "http://x.test/turn/capabilities");
  assert.equal(f.calls[2].url, `http://x.test/turn/sessions/${sessionId}/turns/${turnId}/stream?after=${want[cut - 1]}`);
  assert.equal(f.calls[2].init.method, "GET");
  assert.equal(f.calls[2].init.headers["X-Turnstream-Snapshot-Scope"], "turn");
});

test("without resume in capabilities a dropped stream is StreamIncompleteError", async () => {
  const f = scripted(
    () => ndjsonResponse(withLF(plainLines.slice(0, 2))),
    () => jsonResponse(200, { protocols: [], extensions: ["stop"] }),
  );
  const c = new TurnstreamClient({ turnURL: "http://x.test/", fetch: f.fetch });
  await assert.rejects(drain(c.submit({ sessionId, turnId, input: "x" })), StreamIncompleteError);
  assert.equal(f.calls.length, 2);
});

test("resume reads a running turn after a sequence, and resumes again when it drops", async () => {
  const caps = { protocols: [{ protocol: "agentskit.chat.turn", versions: [1] }], extensions: ["stop", "resume"] };
  const seqOf = (l) => decodeTurnEvent(l).event.sequence;
  const after = seqOf(plainLines[1]);
  const f = scripted(
    // The newest state first (at after: already shown, so skipped), then
    // newer ones; the connection drops inside a line.
    () => ndjsonResponse([...withLF(plainLines.slice(1, 4)), plainLines[4].subarray(0, 9)]),
    () => jsonResponse(200, caps),
    () => ndjsonResponse(withLF(plainLines.slice(3))),
  );
  const c = new TurnstreamClient({ turnURL: "http://x.test/turn/", fetch: f.fetch });
  const turn = c.resume({ sessionId, turnId, after, scope: "turn" });
  const seqs = (await drain(turn)).map((s) => s.sequence);
  assert.deepEqual(seqs, plainLines.slice(2).map(seqOf), "only newer snapshots, each once, the terminal one last");
  assert.equal(f.calls[0].url, `http://x.test/turn/sessions/${sessionId}/turns/${turnId}/stream?after=${after}`);
  assert.equal(f.calls[0].init.method, "GET");
  assert.equal(f.calls[0].init.body, undefined, "nothing is submitted");
  assert.equal(f.calls[2].url, `http://x.test/turn/sessions/${sessionId}/turns/${turnId}/stream?after=${seqOf(plainLines[3])}`);
  assert.throws(() => c.resume({ sessionId, turnId, after: -1 }), TypeError);
  assert.throws(() => c.resume({ sessionId, turnId: "not safe" }), TypeError);
  // Without after the stream starts at the turn's newest state.
  const g = scripted(() => ndjsonResponse(withLF(plainLines)));
  const d = new TurnstreamClient({ turnURL: "http://x.test/turn/", fetch: g.fetch });
  assert.equal((await drain(d.resume({ sessionId, turnId }))).length, plainLines.length);
  assert.equal(g.calls[0].url, `http://x.test/turn/sessions/${sessionId}/turns/${turnId}/stream`);
});

test("a resume stream ending at its own deadline (SERVER_TIMEOUT, no terminal snapshot) is resumed again", async () => {
  const caps = { protocols: [{ protocol: "agentskit.chat.turn", versions: [1] }], extensions: ["resume"], resume: { available: true } };
  const seqOf = (l) => decodeTurnEvent(l).event.sequence;
  const timeout = (seq) =>
    new TextEncoder().encode(
      JSON.stringify({
        protocol: "agentskit.chat.turn", version: 1, eventId: `d-${seq}`, sessionId, turnId, sequence: seq,
        emittedAt: "2026-07-11T03:00:00.000Z", event: "server.turn.diagnostic",
        payload: { version: 1, code: "SERVER_TIMEOUT", message: "The request timed out.", retryable: true },
      }) + "\n",
    );
  const f = scripted(
    () => ndjsonResponse(withLF(plainLines.slice(0, 2))), // dropped
    () => jsonResponse(200, caps),
    () => ndjsonResponse([...withLF(plainLines.slice(2, 3)), timeout(seqOf(plainLines[2]) + 1)]), // progress, then its deadline
    () => ndjsonResponse([timeout(seqOf(plainLines[2]) + 1)]), // its deadline without progress: once is forgiven
    () => ndjsonResponse(withLF(plainLines.slice(2))),
  );
  const c = new TurnstreamClient({ turnURL: "http://x.test/", fetch: f.fetch });
  const seqs = (await drain(c.submit({ sessionId, turnId, input: "x" }))).map((s) => s.sequence);
  assert.deepEqual(seqs, plainLines.map(seqOf), "each snapshot once, the terminal one last");
  assert.equal(f.calls.length, 5);

  // Twice in a row without progress: the diagnostic is the answer.
  const g = scripted(
    () => ndjsonResponse(withLF(plainLines.slice(0, 2))),
    () => jsonResponse(200, caps),
    () => ndjsonResponse([timeout(seqOf(plainLines[1]) + 1)]),
    () => ndjsonResponse([timeout(seqOf(plainLines[1]) + 1)]),
  );
  const d = new TurnstreamClient({ turnURL: "http://x.test/", fetch: g.fetch });
  await assert.rejects(drain(d.submit({ sessionId, turnId, input: "x" })), (e) => e instanceof StreamDiagnosticError && e.code === "SERVER_TIMEOUT");

  // On the submitted stream itself a diagnostic is never resumed.
  const h = scripted(() => ndjsonResponse([...withLF(plainLines.slice(0, 2)), timeout(seqOf(plainLines[1]) + 1)]));
  const e = new TurnstreamClient({ turnURL: "http://x.test/", fetch: h.fetch });
  await assert.rejects(drain(e.submit({ sessionId, turnId, input: "x" })), StreamDiagnosticError);
  assert.equal(h.calls.length, 1);
});

test("exportSession: the document of GET .../export, complete or refused", async () => {
  const client = (f) => new TurnstreamClient({ turnURL: "http://x.test/turn/", historyURL: "http://x.test/turn/", fetch: f.fetch });
  const doc = { format: "turnstream.export", version: 1, sessionId: "s-1", exportedAt: "2026-12-04T17:00:00.000Z", session: {}, turns: [{ turnId: "t1" }], complete: true };
  let f = scripted(() => jsonResponse(200, doc));
  assert.deepEqual(await exportSession(client(f), "s-1"), doc);
  assert.equal(f.calls[0].url, "http://x.test/turn/sessions/s-1/export");
  assert.equal(f.calls[0].init.method, "GET");
  // Cut short by the server: retryable, never a partial document.
  f = scripted(() => jsonResponse(200, { ...doc, complete: false, error: { version: 1, code: "SERVER_INTERNAL", message: "x", retryable: true } }));
  await assert.rejects(exportSession(client(f), "s-1"), (e) => e.code === "RESPONSE_INVALID" && e.retryable);
  // Another session's document, or not one at all.
  f = scripted(() => jsonResponse(200, { ...doc, sessionId: "s-2" }));
  await assert.rejects(exportSession(client(f), "s-1"), (e) => e.code === "RESPONSE_INVALID" && !e.retryable);
  f = scripted(() => jsonResponse(404, { error: { version: 1, code: "SESSION_NOT_FOUND", message: "Session not found.", retryable: false } }));
  await assert.rejects(exportSession(client(f), "s-1"), (e) => e instanceof HTTPError && e.code === "SESSION_NOT_FOUND");
  await assert.rejects(exportSession(client(scripted()), "not safe"), TypeError);
});

test("eraseSessions: repeats while sessions are deleted, stops when done or only busy ones are left", async () => {
  const client = (f) => new TurnstreamClient({ turnURL: "http://x.test/turn/", historyURL: "http://x.test/history/", fetch: f.fetch });
  const answer = (status, deleted, busy) => () => jsonResponse(200, { status, deleted, busy });
  let f = scripted(answer("deleting", 100, 0), answer("deleting", 3, 1), answer("deleting", 0, 1));
  assert.deepEqual(await eraseSessions(client(f), "bob@example.com"), { status: "deleting", deleted: 103, busy: 1 });
  assert.equal(f.calls.length, 3);
  assert.equal(f.calls[0].url, "http://x.test/history/principals/bob%40example.com/sessions");
  assert.equal(f.calls[0].init.method, "DELETE");
  f = scripted(answer("deleting", 2, 0), answer("deleted", 1, 0));
  assert.deepEqual(await eraseSessions(client(f), "bob"), { status: "deleted", deleted: 3, busy: 0 });
  f = scripted(() => jsonResponse(403, { error: { version: 1, code: "REQUEST_FORBIDDEN", message: "Forbidden.", retryable: false } }));
  await assert.rejects(eraseSessions(client(f), "bob"), (e) => e instanceof HTTPError && e.code === "REQUEST_FORBIDDEN");
  f = scripted(() => jsonResponse(200, { status: "gone" }));
  await assert.rejects(eraseSessions(client(f), "bob"), (e) => e.code === "RESPONSE_INVALID");
});

test("reasoning reads an assistant message's metadata.reasoning, and only a string", () => {
  const msg = (metadata) => ({ id: "m", role: "assistant", content: "", status: "complete", createdAt: "2026-07-11T03:00:00.000Z", metadata });
  assert.equal(reasoning(msg({ reasoning: "First this.\n\nThen that." })), "First this.\n\nThen that.");
  for (const m of [undefined, {}, { reasoning: 7 }, { reasoning: null }, { reasoning: ["a"] }, { reasoning: { text: "x" } }]) {
    assert.equal(reasoning(msg(m)), "", JSON.stringify(m));
  }
});
