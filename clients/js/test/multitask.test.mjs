// Multitask policies against a scripted fetch: the header, a 202 queued
// answer followed over its stream URL through any number of silent
// waits, the typed refusals, a queued turn's cancellation, the summary's
// queue, and a body read to its end after the terminal line.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import {
  HTTPError,
  MULTITASK_HEADER,
  MultitaskError,
  StreamDiagnosticError,
  TurnstreamClient,
  decodeTurnEvent,
} from "../dist/turnstream.js";
import { jsonResponse, lines, ndjsonResponse, testdata } from "./helpers.mjs";

const plain = new Uint8Array(readFileSync(join(testdata, "streams/plain.ndjson")));
const plainLines = lines(plain);
const { sessionId, turnId } = decodeTurnEvent(plainLines[0]).event;
const queued = { sessionId, turnId, status: "queued", position: 2, streamUrl: `sessions/${sessionId}/turns/${turnId}/stream` };
const diagnostic = (code, retryable = true) =>
  new TextEncoder().encode(
    `{"protocol":"agentskit.chat.turn","version":1,"eventId":"d1","sessionId":"${sessionId}","turnId":"${turnId}","sequence":0,"emittedAt":"2026-07-11T03:00:00.000Z","event":"server.turn.diagnostic","payload":{"version":1,"code":"${code}","message":"m","retryable":${retryable}}}\n`,
  );

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

test("enqueue: the header, the 202, then the queued turn followed through silent waits", async () => {
  const waits = 6; // more than maxResumes (3): a wait is no failure
  const f = scripted(
    () => jsonResponse(202, queued),
    ...Array.from({ length: waits }, () => () => ndjsonResponse([diagnostic("SERVER_TIMEOUT")])),
    () => ndjsonResponse([plain]),
  );
  const c = new TurnstreamClient({ turnURL: "http://x.test/turn/", fetch: f.fetch });
  const told = [];
  const turn = c.submit({ sessionId, turnId, input: "later", multitask: "enqueue", onQueued: (q) => told.push(q) });
  const seen = await drain(turn);
  assert.equal(f.calls[0].init.headers[MULTITASK_HEADER], "enqueue");
  assert.deepEqual(told, [queued]);
  assert.deepEqual(turn.queued, queued);
  assert.equal(seen.length, plainLines.length);
  assert.equal(seen.at(-1).payload.status, "complete");
  for (const call of f.calls.slice(1)) {
    assert.equal(call.url, `http://x.test/turn/sessions/${sessionId}/turns/${turnId}/stream`);
    assert.equal(call.init.method, "GET");
  }
  assert.equal(f.calls.length, waits + 2);
});

test("a queued turn that is cancelled or expires ends with its diagnostic", async () => {
  for (const code of ["TURN_CANCELLED", "TURN_QUEUE_EXPIRED"]) {
    const f = scripted(() => jsonResponse(202, queued), () => ndjsonResponse([diagnostic(code, code === "TURN_QUEUE_EXPIRED")]));
    const c = new TurnstreamClient({ turnURL: "http://x.test/", fetch: f.fetch });
    await assert.rejects(drain(c.submit({ sessionId, turnId, input: "x", multitask: "enqueue" })), (e) => e instanceof StreamDiagnosticError && e.code === code);
  }
});

test("a 202 that is not this turn's queued answer is RESPONSE_INVALID", async () => {
  const bad = {
    "another turn": { ...queued, turnId: "other" },
    "another session": { ...queued, sessionId: "other" },
    "not queued": { ...queued, status: "running" },
    "position 0": { ...queued, position: 0 },
    "position 1.5": { ...queued, position: 1.5 },
    "an absolute URL": { ...queued, streamUrl: "https://elsewhere.example/x" },
    "a rooted path": { ...queued, streamUrl: "/sessions/x/stream" },
    "a dot segment": { ...queued, streamUrl: "../x/stream" },
    "a query": { ...queued, streamUrl: "sessions/x/stream?after=1" },
    "a protocol-relative URL": { ...queued, streamUrl: "//elsewhere.example/x" },
    "no stream URL": { ...queued, streamUrl: undefined },
    "not JSON": "queued",
  };
  for (const [name, body] of Object.entries(bad)) {
    const c = new TurnstreamClient({ turnURL: "http://x.test/", fetch: scripted(() => jsonResponse(202, body)).fetch });
    await assert.rejects(drain(c.submit({ sessionId, turnId, input: "x", multitask: "enqueue" })), (e) => e.code === "RESPONSE_INVALID", name);
  }
});

test("refused policies are MultitaskErrors; SESSION_BUSY stays an HTTPError; a policy that is none is a TypeError", async () => {
  const err = (code, retryable) => ({ error: { version: 1, code, message: "m", retryable } });
  const full = new TurnstreamClient({ turnURL: "http://x.test/", fetch: scripted(() => jsonResponse(409, err("SESSION_QUEUE_FULL", true))).fetch });
  await assert.rejects(drain(full.submit({ sessionId, input: "x", multitask: "enqueue" })), (e) =>
    e instanceof MultitaskError && e instanceof HTTPError && e.code === "SESSION_QUEUE_FULL" && e.status === 409 && e.retryable === true);
  const no = new TurnstreamClient({ turnURL: "http://x.test/", fetch: scripted(() => jsonResponse(422, err("MULTITASK_NOT_ALLOWED", false))).fetch });
  await assert.rejects(drain(no.submit({ sessionId, input: "x", multitask: "interrupt" })), (e) =>
    e instanceof MultitaskError && e.code === "MULTITASK_NOT_ALLOWED" && e.status === 422 && e.retryable === false);
  const busy = new TurnstreamClient({ turnURL: "http://x.test/", fetch: scripted(() => jsonResponse(409, err("SESSION_BUSY", true))).fetch });
  await assert.rejects(drain(busy.submit({ sessionId, input: "x" })), (e) => e instanceof HTTPError && !(e instanceof MultitaskError) && e.code === "SESSION_BUSY");
  assert.throws(() => busy.submit({ sessionId, input: "x", multitask: "later" }), TypeError);
  // A decision carries no policy: the header is not sent.
  const f = scripted(() => ndjsonResponse([plain]));
  const d = new TurnstreamClient({ turnURL: "http://x.test/", fetch: f.fetch });
  await drain(d.submit({ sessionId, turnId, input: "Approved.", confirmation: { token: "cf1", decision: "approve" }, multitask: "enqueue" }));
  assert.equal(f.calls[0].init.headers[MULTITASK_HEADER], undefined);
});

test("stop tells a cancelled queued turn from a stopped one", async () => {
  const f = scripted(
    () => jsonResponse(202, { stopRequested: true, cancelled: true }),
    () => jsonResponse(202, { stopRequested: true }),
    () => new Response(null, { status: 204 }),
  );
  const c = new TurnstreamClient({ turnURL: "http://x.test/", fetch: f.fetch });
  assert.deepEqual(await c.stop("s-1", "t-1"), { stopRequested: true, cancelled: true });
  assert.deepEqual(await c.stop("s-1", "t-1"), { stopRequested: true, cancelled: false });
  assert.deepEqual(await c.stop("s-1", "t-1"), { stopRequested: true, cancelled: false });
});

test("the summary's queuedTurns, malformed entries left out; multitaskPolicies from capabilities", async () => {
  const good = { turnId: "t2", position: 1, inputPreview: "later", queuedAt: "2026-07-11T03:00:00.000Z", expiresAt: 1796143755934 };
  const f = scripted(
    () => jsonResponse(200, { sessionId: "s-1", cursor: 4, currentTurn: null, pendingInteractions: [], queuedTurns: [good, { ...good, turnId: "bad id" }, { ...good, position: 0 }] }),
    () => jsonResponse(200, { sessionId: "s-1", cursor: 4, currentTurn: null }),
    () => jsonResponse(200, { sessionId: "s-1", cursor: 4, currentTurn: null, queuedTurns: {} }),
    () => jsonResponse(200, { protocols: [], extensions: ["multitask"], multitask: { available: true, policies: ["reject", "enqueue", "rollback", "sideways"] } }),
  );
  const c = new TurnstreamClient({ turnURL: "http://x.test/turn/", historyURL: "http://x.test/history/", fetch: f.fetch });
  assert.deepEqual((await c.session("s-1")).queuedTurns, [good]);
  assert.deepEqual((await c.session("s-1")).queuedTurns, [], "a server without queues");
  await assert.rejects(c.session("s-1"), (e) => e.code === "RESPONSE_INVALID");
  assert.deepEqual(await c.multitaskPolicies(), ["reject", "enqueue", "rollback"]);
  const none = new TurnstreamClient({ turnURL: "http://x.test/", fetch: async () => { throw new TypeError("down"); } });
  assert.deepEqual(await none.multitaskPolicies(), ["reject"]);
});

test("resume({queued}) waits through silent waits too", async () => {
  const f = scripted(...Array.from({ length: 5 }, () => () => ndjsonResponse([diagnostic("SERVER_TIMEOUT")])), () => ndjsonResponse([plain]));
  const c = new TurnstreamClient({ turnURL: "http://x.test/", fetch: f.fetch });
  const seen = await drain(c.resume({ sessionId, turnId, queued: true }));
  assert.equal(seen.at(-1).payload.status, "complete");
  // Without it, two waits in a row without progress end the turn.
  const caps = { protocols: [{ protocol: "agentskit.chat.turn", versions: [1] }], extensions: ["resume"] };
  const g = scripted(() => ndjsonResponse([diagnostic("SERVER_TIMEOUT")]), () => jsonResponse(200, caps), () => ndjsonResponse([diagnostic("SERVER_TIMEOUT")]));
  const d = new TurnstreamClient({ turnURL: "http://x.test/", fetch: g.fetch });
  await assert.rejects(drain(d.resume({ sessionId, turnId })), (e) => e.code === "SERVER_TIMEOUT");
});

test("after the terminal line the body is read to its end, not cancelled", async () => {
  let cancelled = false;
  let closed = false;
  const chunks = [plain, new TextEncoder().encode("\n")];
  const body = new ReadableStream({
    pull(ctrl) {
      if (chunks.length) ctrl.enqueue(chunks.shift());
      else {
        closed = true;
        ctrl.close();
      }
    },
    cancel() {
      cancelled = true;
    },
  });
  const c = new TurnstreamClient({ turnURL: "http://x.test/", fetch: async () => new Response(body, { headers: { "content-type": "application/x-ndjson" } }) });
  await drain(c.submit({ sessionId, turnId, input: "x" }));
  for (let i = 0; i < 100 && !closed; i++) await new Promise((r) => setImmediate(r));
  assert.equal(closed, true, "read to its end");
  assert.equal(cancelled, false, "never cancelled");
});
