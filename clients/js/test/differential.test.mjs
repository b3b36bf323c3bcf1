// A differential test against the Go decoder: thousands of mutations of
// the recorded lines (bytes flipped, dropped, inserted, duplicated keys,
// cut lines), each decoded here and by turnctl validate; the verdicts must
// be identical, diagnostics byte for byte. The mutations come from a
// seeded generator, so every run checks the same cases.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { decodeTurnEvent } from "../dist/turnstream.js";
import { turnctlBinary } from "./devserver.mjs";
import { fixtureFiles, lines } from "./helpers.mjs";

// mulberry32: a small seeded PRNG.
function prng(seed) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const TOKENS = ['"', "\\", "{", "}", "[", "]", ",", ":", "0", "-", ".", "e", "\\u", "\\ud800", "null", "1.0", '"x"', " ", "\r", "\t", "\u00e9", "\u{1f600}", "\u2028"];

function mutate(line, rnd) {
  const b = Buffer.from(line);
  const at = Math.floor(rnd() * (b.length + 1));
  switch (Math.floor(rnd() * 6)) {
    case 0: // flip one byte (never to LF, which would split the line)
      if (b.length) b[Math.min(at, b.length - 1)] = Math.floor(rnd() * 256) === 10 ? 11 : Math.floor(rnd() * 256);
      return b;
    case 1: // drop a span
      return Buffer.concat([b.subarray(0, at), b.subarray(at + 1 + Math.floor(rnd() * 8))]);
    case 2: // insert a JSON-ish token
      return Buffer.concat([b.subarray(0, at), Buffer.from(TOKENS[Math.floor(rnd() * TOKENS.length)]), b.subarray(at)]);
    case 3: // cut the line
      return b.subarray(0, at);
    case 4: { // duplicate a key, or add a case-changed or Unicode-folded spelling of it
      const s = b.toString("utf8");
      const keys = [...s.matchAll(/"([A-Za-z]+)":/g)];
      if (!keys.length) return b;
      const k = keys[Math.floor(rnd() * keys.length)];
      const r = rnd();
      let name = k[1];
      if (r < 0.25) name = `${name[0].toUpperCase()}${name.slice(1)}`;
      else if (r < 0.75) {
        // A letter replaced by one that folds to it under simple folding
        // (long s, KELVIN SIGN), or by a look-alike that does not (dotted
        // and dotless I, ß for ss, ANGSTROM SIGN).
        const i = Math.floor(rnd() * name.length);
        const fold = { s: "\u017f", S: "\u017f", k: "\u212a", K: "\u212a", i: "\u0131", I: "\u0130", a: "\u212b" }[name[i]] ?? name[i].toUpperCase();
        name = name.slice(0, i) + fold + name.slice(i + 1);
        if (r > 0.7) name = name.replace("ss", "\u00df");
      }
      return Buffer.from(s.slice(0, k.index) + `"${name}":1,` + s.slice(k.index));
    }
    default: { // replace a number with an edge value
      const s = b.toString("utf8");
      const edges = ["9007199254740992", "9007199254740991", "-0", "1e400", "0.5", "1E0", "01"];
      return Buffer.from(s.replace(/\d+/, edges[Math.floor(rnd() * edges.length)]));
    }
  }
}

test("the decoder agrees with the Go decoder on mutated lines", (t) => {
  const seeds = fixtureFiles().flatMap((f) => lines(f.input)).filter((l) => l.length < 20000);
  const rnd = prng(16);
  const cases = [];
  for (let i = 0; i < 20000; i++) {
    let m = seeds[Math.floor(rnd() * seeds.length)];
    const n = 1 + Math.floor(rnd() * 3);
    for (let j = 0; j < n; j++) m = mutate(m, rnd);
    cases.push(Buffer.from(m).filter((c) => c !== 0x0a));
  }
  const out = spawnSync(turnctlBinary(), ["validate"], { input: Buffer.concat(cases.flatMap((c) => [c, Buffer.from("\n")])), maxBuffer: 64 << 20 });
  const verdicts = out.stdout.toString("utf8").split("\n").slice(0, -1);
  assert.equal(verdicts.length, cases.length, out.stderr.toString());
  let accepted = 0;
  cases.forEach((c, i) => {
    const r = decodeTurnEvent(c);
    const mine = r.ok ? JSON.stringify({ ok: true, event: r.event.event }) : JSON.stringify({ ok: false, diagnostic: r.diagnostic });
    if (r.ok) accepted++;
    assert.equal(mine, verdicts[i], `case ${i}: ${c.toString("hex").slice(0, 400)}`);
  });
  t.diagnostic(`${accepted} of ${cases.length} mutated lines accepted by both`);
  assert.ok(accepted > 100 && accepted < cases.length - 100, `${accepted} of ${cases.length} accepted: both verdicts exercised`);
});
