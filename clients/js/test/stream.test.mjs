// Incremental decoding: recorded streams cut at every byte position
// (inside multi-byte characters too) give exactly the snapshots of the
// uncut stream, each once, the terminal one last.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { LineSplitter, TurnstreamClient, decodeTurnEvent } from "../dist/turnstream.js";
import { lines, ndjsonResponse, testdata } from "./helpers.mjs";

const streams = readdirSync(join(testdata, "streams"))
  .filter((f) => f.endsWith(".ndjson") && !f.endsWith(".want.ndjson"))
  .map((f) => ({ name: f, bytes: new Uint8Array(readFileSync(join(testdata, "streams", f))) }));

test("recorded streams are present and hold multi-byte characters", () => {
  assert.ok(streams.length >= 4);
  const unicode = streams.find((s) => s.name === "unicode.ndjson");
  assert.ok(unicode.bytes.some((b) => b >= 0xf0), "a 4-byte UTF-8 character");
});

function collect(splitter, chunks) {
  const out = [];
  for (const c of chunks) out.push(...splitter.push(c));
  const tail = splitter.flush();
  if (tail.length) out.push(tail);
  return out.map((l) => Buffer.from(l).toString("hex"));
}

test("LineSplitter: one cut at every byte position", () => {
  for (const { name, bytes } of streams) {
    const want = lines(bytes).map((l) => Buffer.from(l).toString("hex"));
    for (let i = 0; i <= bytes.length; i++) {
      const got = collect(new LineSplitter(), [bytes.subarray(0, i), bytes.subarray(i)]);
      assert.deepEqual(got, want, `${name} cut at ${i}`);
    }
    assert.deepEqual(collect(new LineSplitter(), Array.from(bytes, (b) => Uint8Array.of(b))), want, `${name} byte by byte`);
  }
});

function clientFor(chunks) {
  return new TurnstreamClient({ turnURL: "http://turn.test/", resume: "off", fetch: async () => ndjsonResponse(chunks) });
}

function nearLF(bytes, i) {
  for (let k = Math.max(0, i - 3); k <= Math.min(bytes.length - 1, i + 3); k++) if (bytes[k] === 0x0a) return true;
  return false;
}

async function run(sessionId, turnId, chunks) {
  const turn = clientFor(chunks).submit({ sessionId, turnId, input: "x" });
  const seen = [];
  for await (const snap of turn) seen.push(JSON.stringify(snap));
  return { seen, invalid: turn.invalidLines.length };
}

test("Turn: every cut position yields the same snapshots, once each, terminal last", async () => {
  for (const { name, bytes } of streams) {
    const first = decodeTurnEvent(lines(bytes)[0]);
    assert.ok(first.ok, name);
    const { sessionId, turnId } = first.event;
    const whole = await run(sessionId, turnId, [bytes]);
    const all = lines(bytes).map((l) => decodeTurnEvent(l).event);
    assert.equal(whole.seen.length, all.length, `${name}: every line accepted`);
    assert.equal(whole.invalid, 0);
    const last = JSON.parse(whole.seen.at(-1));
    assert.ok(["complete", "error"].includes(last.payload.status), `${name} ends with its terminal snapshot`);
    const seqs = whole.seen.map((s) => JSON.parse(s).sequence);
    assert.deepEqual(seqs, [...seqs].sort((a, b) => a - b));
    assert.equal(new Set(seqs).size, seqs.length);
    // Every position of the smaller streams; near every LF and inside
    // every multi-byte character of the larger ones (the cuts that matter),
    // keeping the suite quick.
    const every = bytes.length <= 7000;
    for (let i = 0; i <= bytes.length; i++) {
      if (!every && !nearLF(bytes, i) && !(bytes[i] >= 0x80)) continue;
      const cut = await run(sessionId, turnId, [bytes.subarray(0, i), bytes.subarray(i)]);
      assert.deepEqual(cut.seen, whole.seen, `${name} cut at ${i}`);
    }
    // Three cuts, at and around every multi-byte character's bytes.
    for (let i = 0; i < bytes.length; i++) {
      if (bytes[i] < 0x80) continue;
      const cut = await run(sessionId, turnId, [bytes.subarray(0, i), bytes.subarray(i, i + 1), bytes.subarray(i + 1)]);
      assert.deepEqual(cut.seen, whole.seen, `${name} cut around ${i}`);
    }
  }
});

test("Turn: a repeated or stale line is never shown twice", async () => {
  const { bytes } = streams.find((s) => s.name === "plain.ndjson");
  const ls = lines(bytes);
  const nl = Uint8Array.of(0x0a);
  // Every line twice, and the first line again before the last.
  const chunks = [];
  for (const l of ls.slice(0, -1)) chunks.push(l, nl, l, nl);
  chunks.push(ls[0], nl, ls.at(-1), nl);
  const { sessionId, turnId } = decodeTurnEvent(ls[0]).event;
  const got = await run(sessionId, turnId, chunks);
  const whole = await run(sessionId, turnId, [bytes]);
  assert.deepEqual(got.seen, whole.seen);
});

test("Turn: a stream without its final LF still delivers the terminal line", async () => {
  const { bytes } = streams.find((s) => s.name === "plain.ndjson");
  const { sessionId, turnId } = decodeTurnEvent(lines(bytes)[0]).event;
  const got = await run(sessionId, turnId, [bytes.subarray(0, bytes.length - 1)]);
  assert.equal(JSON.parse(got.seen.at(-1)).payload.status, "complete");
});
