// Approvals against a scripted fetch: a decision's submit payload, the
// refused decisions as typed errors, and the waiting calls read from a
// snapshot's assistant message and from the history summary.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import {
  CONFIRMATION_CODES,
  ConfirmationError,
  HTTPError,
  TurnstreamClient,
  TurnstreamError,
  decodeTurnEvent,
  pendingConfirmations,
} from "../dist/turnstream.js";
import { jsonResponse, ndjsonResponse, testdata } from "./helpers.mjs";

const plain = new Uint8Array(readFileSync(join(testdata, "streams/plain.ndjson")));
const token = "cf0123456789abcdef0123456789abcdef";

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

// sent decodes the body of a recorded submit with the strict decoder and
// also returns its exact payload text.
function sent(call) {
  const r = decodeTurnEvent(call.init.body);
  assert.ok(r.ok, "the client sends a valid submit");
  return { event: r.event, raw: JSON.parse(call.init.body).payload };
}

test("decide sends confirmation {token, decision} beside the label, on a new turn id", async () => {
  for (const [decision, label] of [["approve", "Approved."], ["deny", "Denied."]]) {
    const f = scripted(() => ndjsonResponse([]));
    const c = new TurnstreamClient({ turnURL: "http://x.test/turn/", fetch: f.fetch, resume: "off" });
    const turn = c.decide({ sessionId: "s-1", token, decision });
    await assert.rejects(async () => { for await (const _ of turn); }, { code: "STREAM_INCOMPLETE" });
    const { event, raw } = sent(f.calls[0]);
    assert.deepEqual(raw, { input: label, confirmation: { token, decision } }, "exactly these fields");
    assert.deepEqual(event.payload, { input: label, confirmation: { token, decision } });
    assert.equal(event.turnId, turn.turnId);
    assert.equal(f.calls[0].url, "http://x.test/turn/");
  }
});

test("decide keeps a given label, turn id and scope; submit takes a confirmation too", async () => {
  const f = scripted(() => ndjsonResponse([]), () => ndjsonResponse([]));
  const c = new TurnstreamClient({ turnURL: "http://x.test/turn/", fetch: f.fetch, resume: "off" });
  const t1 = c.decide({ sessionId: "s-1", token, decision: "deny", label: "No, keep it.", turnId: "t-9", scope: "turn" });
  await assert.rejects(async () => { for await (const _ of t1); });
  assert.deepEqual(sent(f.calls[0]).raw, { input: "No, keep it.", confirmation: { token, decision: "deny" } });
  assert.equal(sent(f.calls[0]).event.turnId, "t-9");
  assert.equal(f.calls[0].init.headers["X-Turnstream-Snapshot-Scope"], "turn");
  const t2 = c.submit({ sessionId: "s-1", input: "ok", lineage: { operation: "submit" }, confirmation: { token, decision: "approve", extra: 1 } });
  await assert.rejects(async () => { for await (const _ of t2); });
  assert.deepEqual(sent(f.calls[1]).raw, { input: "ok", lineage: { operation: "submit" }, confirmation: { token, decision: "approve" } });
});

test("a malformed decision is a TypeError before anything is sent", () => {
  const f = scripted();
  const c = new TurnstreamClient({ turnURL: "http://x.test/turn/", fetch: f.fetch });
  const bad = [
    { sessionId: "s-1", token: "-x", decision: "approve" },
    { sessionId: "s-1", token: "", decision: "approve" },
    { sessionId: "s-1", token, decision: "Approve" },
    { sessionId: "s-1", token, decision: "yes" },
    { sessionId: "s-1", token, decision: "approve", label: "  " },
    { sessionId: "bad id", token, decision: "approve" },
  ];
  for (const o of bad) assert.throws(() => c.decide(o), TypeError, JSON.stringify(o));
  const edit = { operation: "edit", parentTurnId: "t-1", sourceMessageId: "m-1" };
  assert.throws(() => c.submit({ sessionId: "s-1", input: "x", lineage: edit, confirmation: { token, decision: "approve" } }), TypeError);
  assert.equal(f.calls.length, 0);
});

test("refused decisions are ConfirmationErrors, never retryable", async () => {
  const cases = [
    [404, "CONFIRMATION_NOT_FOUND", "Confirmation not found."],
    [409, "CONFIRMATION_DECIDED", "This confirmation has already been decided."],
    [410, "CONFIRMATION_EXPIRED", "This confirmation has expired."],
  ];
  assert.deepEqual([...CONFIRMATION_CODES], cases.map((c) => c[1]));
  for (const [status, code, message] of cases) {
    for (const retryable of [false, true]) {
      const f = scripted(() => jsonResponse(status, { error: { version: 1, code, message, retryable } }));
      const c = new TurnstreamClient({ turnURL: "http://x.test/turn/", fetch: f.fetch });
      const err = await c.decide({ sessionId: "s-1", token, decision: "approve" })[Symbol.asyncIterator]().next().then(
        () => assert.fail("resolved"),
        (e) => e,
      );
      assert.ok(err instanceof ConfirmationError, code);
      assert.ok(err instanceof HTTPError && err instanceof TurnstreamError);
      assert.equal(err.code, code);
      assert.equal(err.status, status);
      assert.equal(err.message, message);
      assert.equal(err.retryable, false, "a decision refused is refused for good");
      assert.equal(err.name, "ConfirmationError");
    }
  }
  // Other refusals stay plain HTTPErrors.
  const f = scripted(() => jsonResponse(409, { error: { version: 1, code: "SESSION_BUSY", message: "Busy.", retryable: true } }));
  const c = new TurnstreamClient({ turnURL: "http://x.test/turn/", fetch: f.fetch });
  const err = await c.decide({ sessionId: "s-1", token, decision: "deny" })[Symbol.asyncIterator]().next().catch((e) => e);
  assert.ok(err instanceof HTTPError && !(err instanceof ConfirmationError));
  assert.equal(err.retryable, true);
});

test("a decision turn streams like any turn", async () => {
  const f = scripted(() => ndjsonResponse([plain]));
  const c = new TurnstreamClient({ turnURL: "http://x.test/turn/", fetch: f.fetch });
  const { sessionId, turnId } = decodeTurnEvent(plain.subarray(0, plain.indexOf(0x0a))).event;
  const seen = [];
  for await (const s of c.decide({ sessionId, turnId, token, decision: "approve" })) seen.push(s);
  assert.ok(seen.length > 1);
  assert.equal(seen.at(-1).payload.status, "complete");
});

test("pendingConfirmations reads an assistant message's metadata, skipping malformed entries", () => {
  const good = { token, toolCallId: "call-1", action: "workspace_note_delete", expiresAt: 1_780_000_000_000 };
  const msg = (metadata) => ({ id: "m", role: "assistant", content: "", status: "complete", createdAt: "2026-07-11T03:00:00.000Z", metadata });
  assert.deepEqual(pendingConfirmations(msg(undefined)), []);
  assert.deepEqual(pendingConfirmations(msg({})), []);
  assert.deepEqual(pendingConfirmations(msg({ pendingConfirmations: "x" })), []);
  const list = [
    good,
    { ...good, token: "-bad" },
    { ...good, expiresAt: "soon" },
    { ...good, expiresAt: 1.5 },
    { ...good, toolCallId: 3 },
    { token, action: "a", expiresAt: 1 },
    null,
    { ...good, token: "cf2", extra: true },
  ];
  const { extra, ...second } = { ...good, token: "cf2", extra: true };
  assert.deepEqual(pendingConfirmations(msg({ pendingConfirmations: list })), [good, second]);
  // From a decoded snapshot line (frozen metadata) as well.
  const line = JSON.stringify({
    protocol: "agentskit.chat.turn", version: 1, eventId: "e-1", sessionId: "s-1", turnId: "t-1", sequence: 3,
    emittedAt: "2026-07-11T03:00:00.000Z", event: "server.turn.snapshot",
    payload: {
      status: "complete", usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 },
      messages: [{
        id: "m2", role: "assistant", content: "", status: "complete", createdAt: "2026-07-11T03:00:00.000Z",
        toolCalls: [{ id: "call-1", name: "workspace_note_delete", args: { title: "Shopping list" }, status: "requires_confirmation" }],
        metadata: { pendingConfirmations: [good] },
      }],
    },
  });
  const r = decodeTurnEvent(line);
  assert.ok(r.ok);
  assert.deepEqual(pendingConfirmations(r.event.payload.messages[0]), [good]);
});

test("session() lists the pending interactions, [] when the server lists none", async () => {
  const base = { sessionId: "s-1", definitionId: "d", definitionRevision: 1, cursor: 4, createdAt: "x", updatedAt: "x", currentTurn: null };
  const pi = { interactionId: token, data: { toolName: "workspace_note_delete", args: { title: "Shopping list" }, toolCallId: "call-1", turnId: "t-1", expiresAt: 1_780_000_000_000 } };
  const f = scripted(
    () => jsonResponse(200, { ...base, pendingInteractions: [pi, { interactionId: "x", data: { kind: "other" } }, 7] }),
    () => jsonResponse(200, base),
    () => jsonResponse(200, { ...base, pendingInteractions: {} }),
  );
  const c = new TurnstreamClient({ turnURL: "http://x.test/turn/", historyURL: "http://x.test/history/", fetch: f.fetch });
  assert.deepEqual((await c.session("s-1")).pendingInteractions, [pi], "other kinds and malformed entries left out");
  assert.deepEqual((await c.session("s-1")).pendingInteractions, []);
  await assert.rejects(c.session("s-1"), { code: "RESPONSE_INVALID" });
});
