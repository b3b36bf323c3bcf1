// The compact stream (docs/compact.md): the append line decoder, the
// cursor's appends (applied, stale, gap, wrong base), provisional text at
// every cut of an open line, and a recorded compact stream from the dev
// server read through a Turn cut at every byte.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import {
  SnapshotCursor,
  TurnstreamClient,
  decodeAppend,
  decodePartialAppend,
  decodeTurnEvent,
  isAppendLine,
} from "../dist/turnstream.js";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { startDevServer } from "./devserver.mjs";
import { here, lines, ndjsonResponse } from "./helpers.mjs";

const enc = new TextEncoder();
const T = "2026-12-01T10:00:00.000Z";

function snapshot(seq, content, status = "streaming") {
  return JSON.stringify({
    protocol: "agentskit.chat.turn", version: 1, eventId: "e1", sessionId: "s1", turnId: "t1", sequence: seq, emittedAt: T,
    event: "server.turn.snapshot",
    payload: {
      messages: [
        { id: "t1.u", role: "user", content: "hi", status: "complete", createdAt: T },
        { id: "t1.a", role: "assistant", content, status: status === "streaming" ? "streaming" : "complete", createdAt: T },
      ],
      status, usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 },
    },
  });
}

// appendText writes an append line as the Go encoder does: members in the
// grammar's order, text last.
function appendText(seq, after, offset, text, extra = "") {
  return `{"protocol":"agentskit.chat.turn","version":1,"event":"turnstream.turn.append","sequence":${seq},"after":${after},"offset":${offset}${extra},"text":${JSON.stringify(text)}}`;
}

test("an append line is an unknown event kind to the turn decoder, inert to a plain cursor", () => {
  const line = appendText(3, 2, 0, "x");
  const r = decodeTurnEvent(line);
  assert.equal(r.ok, false);
  assert.equal(r.diagnostic.code, "PROTOCOL_UNKNOWN_EVENT");
  const c = new SnapshotCursor("s1");
  assert.equal(c.apply(snapshot(2, "")), true);
  assert.equal(c.apply(line), false);
  assert.equal(c.sequence, 2);
});

test("decodeAppend reads good lines and rejects bad ones", () => {
  const good = appendText(3, 2, 1, "a\"b\\ é 😀\n", `,"usage":{"promptTokens":1,"completionTokens":2,"totalTokens":3}`);
  assert.ok(isAppendLine(good) && isAppendLine(enc.encode(good)));
  assert.deepEqual(decodeAppend(enc.encode(good)), {
    sequence: 3, after: 2, offset: 1, text: "a\"b\\ é 😀\n",
    usage: { promptTokens: 1, completionTokens: 2, totalTokens: 3 },
  });
  const bad = {
    "not JSON": good.slice(0, -2),
    "version 2": good.replace(`"version":1`, `"version":2`),
    "another kind": good.replace("turnstream.turn.append", "server.turn.snapshot"),
    "missing after": good.replace(`"after":2,`, ""),
    "after = sequence": good.replace(`"after":2`, `"after":3`),
    "negative offset": good.replace(`"offset":1`, `"offset":-1`),
    "fractional sequence": good.replace(`"sequence":3`, `"sequence":3.5`),
    "text not a string": appendText(3, 2, 1, "x").replace(`"text":"x"`, `"text":1`),
    "partial usage": good.replace(`"completionTokens":2,`, ""),
    "null usage": appendText(3, 2, 1, "x", `,"usage":null`),
    "duplicate member": appendText(3, 2, 1, "x", `,"offset":1`),
    "case variant": appendText(3, 2, 1, "x", `,"Text":"y"`),
    "lone surrogate": appendText(3, 2, 1, "x").replace(`"text":"x"`, `"text":"\\ud800"`),
  };
  for (const [name, line] of Object.entries(bad)) assert.equal(decodeAppend(line), undefined, name);
  assert.equal(decodeAppend(new Uint8Array([0xff, 0xfe])), undefined, "invalid UTF-8");
});

test("the shared append line fixtures decode as the Go decoder decodes them", () => {
  const { cases } = JSON.parse(readFileSync(join(here, "../../../pkg/protocol/testdata/compact.json"), "utf8"));
  assert.ok(cases.length >= 10);
  for (const c of cases) {
    assert.deepEqual(decodeAppend(c.line), c.append, c.name);
    assert.deepEqual(decodeAppend(enc.encode(c.line)), c.append, `${c.name} (bytes)`);
  }
});

test("the cursor applies appends only to the state they were built on", () => {
  const c = new SnapshotCursor("s1");
  assert.equal(c.apply(snapshot(2, "ab")), true);
  const a = (seq, after, offset, text) => decodeAppend(appendText(seq, after, offset, text));
  assert.equal(c.applyAppend(a(3, 2, 2, "cd")), "applied");
  assert.equal(c.snapshot.payload.messages[1].content, "abcd");
  assert.equal(c.sequence, 3);
  assert.ok(Object.isFrozen(c.snapshot) && Object.isFrozen(c.snapshot.payload.messages[1]));
  assert.equal(c.applyAppend(a(3, 2, 2, "cd")), "stale", "never twice");
  assert.equal(c.applyAppend(a(5, 4, 4, "x")), "gap", "a line is missing");
  assert.equal(c.applyAppend(a(4, 3, 3, "x")), "gap", "wrong offset");
  assert.equal(c.snapshot.payload.messages[1].content, "abcd", "nothing changed");
  assert.equal(c.apply(snapshot(6, "abcdef")), true, "a complete snapshot ends the gap");
  assert.equal(c.applyAppend(a(7, 6, 6, "g")), "applied");
  assert.equal(c.apply(snapshot(8, "abcdefg", "complete")), true);
  assert.equal(c.applyAppend(a(9, 8, 7, "h")), "gap", "nothing applies to a terminal snapshot");
  const empty = new SnapshotCursor("s1");
  assert.equal(empty.applyAppend(a(3, 2, 0, "x")), "gap", "nothing held");
});

test("the cursor adds an append line's reasoning to metadata.reasoning, checked against its own offset", () => {
  const c = new SnapshotCursor("s1");
  assert.equal(c.apply(snapshot(2, "")), true);
  const r = (seq, after, offset, rOffset, rText, text = "") =>
    decodeAppend(appendText(seq, after, offset, text, `,"reasoning":{"offset":${rOffset},"text":${JSON.stringify(rText)}}`));
  assert.equal(c.applyAppend(r(3, 2, 0, 0, "First é😀")), "applied");
  assert.deepEqual(c.snapshot.payload.messages[1].metadata, { reasoning: "First é😀" });
  assert.equal(c.applyAppend(r(4, 3, 0, 9, ", then", "An")), "applied");
  assert.equal(c.snapshot.payload.messages[1].metadata.reasoning, "First é😀, then");
  assert.equal(c.snapshot.payload.messages[1].content, "An");
  assert.equal(c.applyAppend(r(5, 4, 2, 3, "x")), "gap", "wrong reasoning offset");
  assert.equal(c.snapshot.payload.messages[1].metadata.reasoning, "First é😀, then", "nothing changed");
  assert.equal(c.applyAppend(decodeAppend(appendText(5, 4, 2, "swer"))), "applied", "text alone keeps the reasoning");
  assert.deepEqual(c.snapshot.payload.messages[1].metadata, { reasoning: "First é😀, then" });
});

test("decodePartialAppend: every cut of an open line gives a growing prefix of its text", () => {
  const text = 'ab "q" \\ é 😀\n\t\u0001 end';
  const line = enc.encode(appendText(3, 2, 1, text));
  const open = new TextDecoder().decode(line).indexOf(`"text":"`) + 8;
  const c = new SnapshotCursor("s1");
  c.apply(snapshot(2, "a"));
  let last = "";
  for (let cut = 0; cut < line.length; cut++) {
    const a = decodePartialAppend(line.subarray(0, cut));
    if (cut < open) {
      assert.equal(a, undefined, `cut ${cut}`);
      continue;
    }
    assert.ok(a && text.startsWith(a.text) && a.text.length >= last.length, `cut ${cut}: ${a?.text}`);
    last = a.text;
    assert.equal(c.provisional(a).payload.messages[1].content, "a" + a.text);
    assert.equal(c.sequence, 2, "provisional text is not state");
  }
  assert.equal(last, text);
});

let srv;
before(async () => {
  srv = await startDevServer({ ECHO_DELAY: "20ms", ECHO_CHUNK_RUNES: "3", SNAPSHOT_INTERVAL: "5ms" });
});
after(async () => {
  await srv?.stop();
});

test("a compact stream from the dev server: the Turn ends with the terminal state at every cut", async () => {
  const chunks = [];
  const recording = async (url, init) => {
    const res = await fetch(url, init);
    const buf = new Uint8Array(await res.arrayBuffer());
    chunks.push(buf);
    return new Response(buf, { status: res.status, headers: res.headers });
  };
  const client = new TurnstreamClient({ turnURL: srv.turnURL, fetch: recording, compact: true, headers: { Authorization: "Bearer dev.cat" } });
  const input = "Compact lines carry this answer, a few characters at a time, é 😀 included. ".repeat(3).trim();
  const turn = client.submit({ sessionId: "c-compact", input });
  const seen = [];
  for await (const s of turn) seen.push(s);
  const final = `Echo: ${input}`;
  assert.equal(turn.snapshot.payload.status, "complete");
  assert.equal(turn.snapshot.payload.messages.at(-1).content, final);
  assert.equal(turn.invalidLines.length, 0);
  const body = chunks[0];
  const all = lines(body);
  const appends = all.filter((l) => isAppendLine(l));
  assert.ok(appends.length >= 2, `${appends.length} append lines`);
  for (const l of all) {
    const r = decodeTurnEvent(l);
    assert.ok(r.ok || (r.diagnostic.code === "PROTOCOL_UNKNOWN_EVENT" && isAppendLine(l)), "every line is an event or an append line");
  }
  // An AgentsKit-style cursor that ignores the append lines ends the same.
  const plain = new SnapshotCursor("c-compact");
  for (const l of all) plain.apply(l);
  assert.deepEqual(plain.snapshot.payload.messages, turn.snapshot.payload.messages);
  // The same bytes cut anywhere, two chunks at a time: texts only grow, the
  // end is the same.
  const replay = async (parts) => {
    const c = new TurnstreamClient({
      turnURL: "http://turn.test/", resume: "off", compact: true,
      fetch: async () => ndjsonResponse(parts, { headers: { "content-type": "application/x-ndjson; charset=utf-8", "x-turnstream-stream-mode": "compact" } }),
    });
    const t = c.submit({ sessionId: "c-compact", turnId: turn.turnId, input: "x" });
    const texts = [];
    for await (const s of t) texts.push(s.payload.messages.at(-1).content);
    return texts;
  };
  for (let cut = 1; cut < body.length; cut += 61) {
    const texts = await replay([body.subarray(0, cut), body.subarray(cut)]);
    assert.equal(texts.at(-1), final, `cut ${cut}`);
    for (let i = 1; i < texts.length; i++) assert.ok(texts[i].length >= texts[i - 1].length && final.startsWith(texts[i]), `cut ${cut}, text ${i}`);
  }
  const bytewise = await replay(Array.from(body, (b) => Uint8Array.of(b)));
  assert.equal(bytewise.at(-1), final);
  assert.ok(bytewise.length > seen.length, `byte by byte the open lines show more steps (${bytewise.length} vs ${seen.length})`);
  for (let i = 1; i < bytewise.length; i++) assert.ok(final.startsWith(bytewise[i]) && bytewise[i].length >= bytewise[i - 1].length, `step ${i} grows a prefix`);
});
