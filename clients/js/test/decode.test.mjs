// The decoder against the Go decoder's golden results: pkg/protocol's
// wire fixtures and clients/js/testdata (recorded dev-server streams and
// edge cases, results written by go test ./internal/demo -update).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { decodeTurnEvent, decodeMessages, isCaseVariant, parseStrict, NOT_JSON, MAX_PARSE_DEPTH } from "../dist/turnstream.js";
import { asJSON, fixtureFiles, goTurnFixtures, lines } from "./helpers.mjs";

test("pkg/protocol turn fixtures give the Go decoder's results", () => {
  const inputs = readdirSync(goTurnFixtures).filter((f) => f.endsWith(".input.json"));
  assert.equal(inputs.length, 15);
  for (const f of inputs) {
    const input = readFileSync(join(goTurnFixtures, f));
    const want = JSON.parse(readFileSync(join(goTurnFixtures, f.replace(".input.json", ".want.json")), "utf8"));
    assert.deepEqual(asJSON(decodeTurnEvent(input)), want, f);
  }
});

test("client fixtures give the Go decoder's results line for line", () => {
  const files = fixtureFiles();
  assert.ok(files.length >= 6, "recorded streams and edge cases present");
  let n = 0;
  for (const { name, input, want } of files) {
    const inLines = lines(input);
    const wantLines = lines(want);
    assert.equal(inLines.length, wantLines.length, name);
    inLines.forEach((line, i) => {
      const got = decodeTurnEvent(line);
      assert.deepEqual(asJSON(got), JSON.parse(Buffer.from(wantLines[i]).toString("utf8")), `${name} line ${i + 1}`);
      // Text input decodes like its UTF-8 bytes, when the bytes are valid UTF-8.
      const text = Buffer.from(line).toString("utf8");
      if (Buffer.from(text, "utf8").equals(Buffer.from(line))) assert.deepEqual(asJSON(decodeTurnEvent(text)), asJSON(got), `${name} line ${i + 1} as text`);
      n++;
    });
  }
  assert.ok(n > 100);
});

test("the decoder never throws and never echoes input", () => {
  const secret = "do-not-leak-\u2603";
  const inputs = [
    `{"protocol":"agentskit.chat.turn","version":1,"eventId":"x","secret":"${secret}"}`,
    `{"eventId":"${secret}"}`,
    `"${secret}"`,
    "\ud800",
    `{"a":"\ud800"}`,
    "[".repeat(MAX_PARSE_DEPTH + 5),
    "{".repeat(3) + secret,
  ];
  for (const s of inputs) {
    const r = decodeTurnEvent(s);
    assert.equal(r.ok, false);
    assert.ok(!JSON.stringify(r).includes("do-not-leak"), s.slice(0, 20));
  }
});

test("parseStrict rejects what two parsers could read two ways", () => {
  assert.equal(parseStrict('{"a":1,"a":1}'), NOT_JSON);
  assert.equal(parseStrict('"\\udc00"'), NOT_JSON);
  assert.equal(parseStrict('"\ud800"'), NOT_JSON); // a raw lone surrogate in text input
  assert.deepEqual(parseStrict('"\\ud83d\\ude00"'), "\u{1f600}");
  const o = parseStrict('{"__proto__":{"polluted":true}}');
  assert.equal(Object.getPrototypeOf(o), Object.prototype);
  assert.deepEqual(Object.keys(o), ["__proto__"]);
  assert.equal({}.polluted, undefined);
  // Depth: MAX_PARSE_DEPTH nested arrays parse, one more does not (as in Go).
  assert.notEqual(parseStrict("[".repeat(MAX_PARSE_DEPTH) + "]".repeat(MAX_PARSE_DEPTH)), NOT_JSON);
  assert.equal(parseStrict("[".repeat(MAX_PARSE_DEPTH + 1) + "]".repeat(MAX_PARSE_DEPTH + 1)), NOT_JSON);
});

// The table of pkg/protocol's TestIsCaseVariant, which holds each case to
// Go's strings.EqualFold.
test("isCaseVariant folds as Go's strings.EqualFold", () => {
  const cases = [
    ["event", ["event"], false],
    ["Event", ["event"], true],
    ["EVENT", ["protocol", "event"], true],
    ["eVeNt", ["event"], true],
    ["\u017ftatus", ["status"], true],
    ["STATU\u017f", ["status"], true],
    ["promptTo\u212aens", ["promptTokens"], true],
    ["me\u00dfage", ["message"], false],
    ["\u0130nput", ["input"], false],
    ["\u0131nput", ["input"], false],
    ["events", ["event"], false],
    ["\u00e9vent", ["event"], false],
    ["future", ["event", "payload"], false],
    ["", ["event"], false],
    ["Id", [], false],
    ["tool_call_id", ["toolCallId"], false],
    ["TOOLCALLID", ["toolCallId"], true],
  ];
  for (const [key, names, want] of cases) assert.equal(isCaseVariant(key, names), want, JSON.stringify(key));
});

// Every code point against every ASCII letter: exactly the letter's other
// case, and U+017F with s and U+212A with k, fold to it (the orbits a Go
// program listing strings.EqualFold over all runes finds).
test("isCaseVariant: the only non-ASCII characters folding to ASCII letters", () => {
  const extra = { s: 0x17f, k: 0x212a };
  for (let c = 0x61; c <= 0x7a; c++) {
    const lower = String.fromCharCode(c);
    for (const name of [lower, lower.toUpperCase()]) {
      const folds = [];
      for (let cp = 0; cp <= 0x10ffff; cp++) {
        if (cp >= 0xd800 && cp <= 0xdfff) continue;
        if (isCaseVariant(String.fromCodePoint(cp), [name])) folds.push(cp);
      }
      const want = [name === lower ? c - 0x20 : c];
      if (extra[lower]) want.push(extra[lower]);
      assert.deepEqual(folds, want, name);
    }
  }
});

test("decodeMessages rejects case variants in messages, parts and tool calls", () => {
  const msg = { id: "m1", role: "assistant", content: "x", status: "complete", createdAt: "2026-07-11T03:00:00.000Z" };
  assert.ok(decodeMessages([msg]));
  assert.ok(decodeMessages([{ ...msg, metadata: { Content: 1 } }]), "metadata is kept verbatim");
  assert.equal(decodeMessages([{ ...msg, Content: "y" }]), undefined);
  assert.equal(decodeMessages([{ ...msg, parts: [{ type: "text", text: "a", Type: "image" }] }]), undefined);
  assert.equal(decodeMessages([{ ...msg, toolCalls: [{ id: "c", name: "n", Name: "m", args: {}, status: "complete" }] }]), undefined);
});
