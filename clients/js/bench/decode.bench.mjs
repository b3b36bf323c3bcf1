// Decoder speed against JSON.parse of the same lines, in the same run:
//   node clients/js/bench/decode.bench.mjs   (after make js-build)
// Prints the median of 7 rounds for each and their ratio. JSON.parse is the
// baseline every browser client would otherwise use (and which accepts
// what the strict decoder must reject).
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { LineSplitter, decodeTurnEvent } from "../dist/turnstream.js";
import { lines, testdata } from "../test/helpers.mjs";

const dir = join(testdata, "streams");
const all = readdirSync(dir)
  .filter((f) => f.endsWith(".ndjson") && !f.endsWith(".want.ndjson"))
  .flatMap((f) => lines(new Uint8Array(readFileSync(join(dir, f)))));
const bytes = all.reduce((n, l) => n + l.length, 0);
const text = new TextDecoder();
const stream = Buffer.concat(all.flatMap((l) => [l, Buffer.from("\n")]));

function median(fn, rounds = 7, reps = 200) {
  const times = [];
  for (let r = 0; r < rounds; r++) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < reps; i++) fn();
    times.push(Number(process.hrtime.bigint() - t0) / 1e6 / reps);
  }
  return times.sort((a, b) => a - b)[rounds >> 1];
}

const base = median(() => { for (const l of all) JSON.parse(text.decode(l)); });
const strict = median(() => { for (const l of all) if (!decodeTurnEvent(l).ok) throw new Error("bad fixture"); });
const split = median(() => { const s = new LineSplitter(); for (let i = 0; i < stream.length; i += 1400) s.push(stream.subarray(i, i + 1400)); });
const mbps = (ms) => (bytes / 1e6 / (ms / 1e3)).toFixed(0);
console.log(`${all.length} lines, ${bytes} bytes (testdata/streams)`);
console.log(`JSON.parse (baseline)      ${base.toFixed(3)} ms/pass  ${mbps(base)} MB/s`);
console.log(`decodeTurnEvent (strict)   ${strict.toFixed(3)} ms/pass  ${mbps(strict)} MB/s  ${(strict / base).toFixed(2)}x baseline`);
console.log(`LineSplitter, 1400 B chunks ${split.toFixed(3)} ms/pass  ${mbps(split)} MB/s  ${(split / base).toFixed(2)}x baseline`);
