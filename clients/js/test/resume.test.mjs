// Resume against the real dev server: the connection of a running turn is
// cut mid-stream, the client resumes from its last sequence on
// GET {turnURL}sessions/{id}/turns/{turnId}/stream?after=, and the reader
// sees every state once, in order, to the terminal one. Cutting the
// connection is not a stop: the turn runs to its end.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { LineSplitter, TurnstreamClient, decodeTurnEvent } from "../dist/turnstream.js";
import { startDevServer } from "./devserver.mjs";

let srv;
before(async () => {
  srv = await startDevServer({ ECHO_DELAY: "60ms", ECHO_CHUNK_RUNES: "3", LEASE_DURATION: "3s", SNAPSHOT_INTERVAL: "5ms" });
});
after(async () => {
  await srv?.stop();
});

// cutting returns a fetch that delivers the first turn POST's body only
// until it has passed `lines` complete lines and part of the next, then
// closes the real connection and fails the read as a dropped network
// does. Every other request passes through. The lines each response
// delivered are kept per request.
function cutting(lines) {
  const log = [];
  const f = async (url, init) => {
    const res = await fetch(url, init);
    const type = res.headers.get("content-type") ?? "";
    if (!res.ok || !type.startsWith("application/x-ndjson")) return res;
    const entry = { url, method: init?.method ?? "GET", lines: [] };
    log.push(entry);
    const cut = entry.method === "POST" && log.filter((e) => e.method === "POST").length === 1;
    const split = new LineSplitter();
    const reader = res.body.getReader();
    let seen = 0;
    const body = new ReadableStream({
      async pull(c) {
        const { value, done } = await reader.read();
        if (done) {
          const rest = split.flush();
          if (rest.length) entry.lines.push(rest);
          return c.close();
        }
        if (!cut) {
          entry.lines.push(...split.push(value));
          return c.enqueue(value);
        }
        // Deliver byte by byte up to the middle of line lines+1, then drop.
        for (let i = 0; i < value.length; i++) {
          if (value[i] === 0x0a && ++seen === lines) {
            const head = value.subarray(0, i + 1 + 5);
            entry.lines.push(...split.push(head.subarray(0, i + 1)));
            c.enqueue(head);
            await reader.cancel(); // the server sees the client go away
            return c.error(new TypeError("network connection lost"));
          }
        }
        entry.lines.push(...split.push(value));
        c.enqueue(value);
      },
      cancel: (r) => reader.cancel(r),
    });
    return new Response(body, { status: res.status, headers: res.headers });
  };
  return { fetch: f, log };
}

test("a connection cut mid-stream resumes from the last sequence, never showing a state twice", async () => {
  const cut = cutting(4);
  const alice = new TurnstreamClient({ turnURL: srv.turnURL, historyURL: srv.historyURL, fetch: cut.fetch, headers: { Authorization: "Bearer dev.alice" } });
  // The route the client builds is the one capabilities describe.
  const caps = await alice.capabilities();
  assert.ok(caps.extensions.includes("resume"), "the dev server offers resume");
  assert.equal(caps.resume.available, true);
  assert.equal(caps.resume.method, "GET");
  assert.equal(caps.resume.path, "/sessions/{sessionId}/turns/{turnId}/stream");
  assert.equal(caps.resume.parameter, "after");
  assert.equal(await alice.canResume(), true);
  const input = "a reply long enough to be cut off in the middle and then resumed from where it was";
  const turn = alice.submit({ sessionId: "rs-a", input, scope: "turn" });
  const seen = [];
  for await (const s of turn) seen.push(s);

  // The first stream really was cut, and a resume took over.
  assert.ok(cut.log.length >= 2, `${cut.log.length} streams`);
  assert.equal(cut.log[0].method, "POST");
  assert.equal(cut.log[0].lines.length, 4, "the first stream ended after four lines");
  const firstSeqs = cut.log[0].lines.map((l) => decodeTurnEvent(l).event.sequence);
  const resumed = cut.log[1];
  assert.equal(resumed.method, "GET");
  assert.equal(new URL(resumed.url).pathname, `/turn/sessions/rs-a/turns/${turn.turnId}/stream`);
  assert.equal(new URL(resumed.url).searchParams.get("after"), String(firstSeqs.at(-1)));

  // Each state shown once, in order; text only grows; the terminal one last.
  const seqs = seen.map((s) => s.sequence);
  assert.deepEqual(seqs, [...seqs].sort((a, b) => a - b));
  assert.equal(new Set(seqs).size, seqs.length, "no sequence shown twice");
  const texts = seen.map((s) => s.payload.messages.at(-1)?.content ?? "");
  for (let i = 1; i < texts.length; i++) assert.ok(texts[i].startsWith(texts[i - 1]), `text ${i} grows from the one before`);
  assert.ok(seen.length > 4, "states after the cut arrived");
  const end = seen.at(-1).payload;
  assert.equal(end.status, "complete", "the cut did not stop the turn");
  assert.equal(end.messages.at(-1).content, `Echo: ${input}`);
  assert.deepEqual(turn.invalidLines, []);

  // History has the one turn, complete, with the same answer.
  const page = await alice.turns("rs-a");
  assert.equal(page.items.length, 1);
  assert.equal(page.items[0].status, "complete");
  assert.equal(page.items[0].messages.at(-1).content, `Echo: ${input}`);
});

test("resume attaches to a turn running elsewhere from the history summary's sequence", async () => {
  const alice = new TurnstreamClient({ turnURL: srv.turnURL, historyURL: srv.historyURL, headers: { Authorization: "Bearer dev.alice" } });
  const input = "the answer a second reader picks up while it is being written, then follows to the end";
  const first = alice.submit({ sessionId: "rs-b", input, scope: "turn" });
  const it = first[Symbol.asyncIterator]();
  let shown;
  do shown = (await it.next()).value;
  while ((shown.payload.messages.at(-1)?.content.length ?? 0) < 12);
  const rest = (async () => { while (!(await it.next()).done); })();

  const summary = await alice.session("rs-b");
  assert.equal(summary.currentTurn?.turnId, first.turnId);
  assert.ok(Number.isSafeInteger(summary.currentTurn.sequence), "currentTurn carries the sequence");
  const after = summary.currentTurn.sequence;
  // History lists the running turn as of that checkpoint (what a reloaded page shows first).
  const listed = (await alice.turns("rs-b", { limit: 1 })).items[0];
  assert.equal(listed.turnId, first.turnId);
  if (listed.status === "running") assert.ok(`Echo: ${input}`.startsWith(listed.messages.at(-1).content));
  const second = [];
  for await (const s of alice.resume({ sessionId: "rs-b", turnId: first.turnId, after, scope: "turn" })) second.push(s);
  await rest;
  assert.ok(second.length >= 1);
  assert.ok(second.every((s) => s.sequence > after), "only states newer than after");
  assert.equal(second.at(-1).payload.status, "complete");
  assert.equal(second.at(-1).payload.messages.at(-1).content, `Echo: ${input}`);
  assert.deepEqual(second.at(-1).payload, first.snapshot.payload, "both readers end on the same state");
});

test("resuming a finished turn after its terminal sequence ends at once, without an error", async () => {
  const alice = new TurnstreamClient({ turnURL: srv.turnURL, historyURL: srv.historyURL, headers: { Authorization: "Bearer dev.alice" } });
  const done = alice.submit({ sessionId: "rs-c", input: "short", scope: "turn" });
  for await (const _ of done);
  const terminal = done.sequence;
  for (const after of [terminal, terminal + 50]) {
    const shown = [];
    for await (const s of alice.resume({ sessionId: "rs-c", turnId: done.turnId, after, scope: "turn" })) shown.push(s);
    assert.deepEqual(shown, [], "the reader already holds the terminal state");
  }
  // Without after, the terminal snapshot itself.
  const again = [];
  for await (const s of alice.resume({ sessionId: "rs-c", turnId: done.turnId, scope: "turn" })) again.push(s);
  assert.equal(again.length, 1);
  assert.equal(again[0].sequence, terminal);
  assert.equal(again[0].payload.status, "complete");
});
