import { readFileSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const here = dirname(fileURLToPath(import.meta.url));
export const testdata = join(here, "../testdata");
export const goTurnFixtures = join(here, "../../../pkg/protocol/testdata/turn");

/** lines splits bytes on LF only; a final LF ends the last line. */
export function lines(buf) {
  const out = [];
  let start = 0;
  for (let i = buf.indexOf(0x0a); i !== -1; i = buf.indexOf(0x0a, start)) {
    out.push(buf.subarray(start, i));
    start = i + 1;
  }
  if (start < buf.length) out.push(buf.subarray(start));
  return out;
}

/** fixtureFiles lists testdata/<dir>/*.ndjson inputs with their Go decoder results. */
export function fixtureFiles() {
  const out = [];
  for (const dir of readdirSync(testdata)) {
    for (const f of readdirSync(join(testdata, dir))) {
      if (!f.endsWith(".ndjson") || f.endsWith(".want.ndjson")) continue;
      const input = readFileSync(join(testdata, dir, f));
      const want = readFileSync(join(testdata, dir, f.replace(/\.ndjson$/, ".want.ndjson")));
      out.push({ name: `${dir}/${f}`, input, want });
    }
  }
  return out;
}

/** stream returns a Response whose body delivers chunks one by one. */
export function ndjsonResponse(chunks, init = {}) {
  let i = 0;
  const body = new ReadableStream({
    pull(c) {
      if (i < chunks.length) c.enqueue(chunks[i++]);
      else c.close();
    },
  });
  return new Response(body, { status: 200, headers: { "content-type": "application/x-ndjson; charset=utf-8" }, ...init });
}

/** jsonResponse returns a JSON Response. */
export function jsonResponse(status, value) {
  return new Response(typeof value === "string" ? value : JSON.stringify(value), {
    status,
    headers: { "content-type": "application/json; charset=utf-8" },
  });
}

/** asJSON normalizes a value as its JSON text would read (-0 is 0). */
export const asJSON = (v) => JSON.parse(JSON.stringify(v));
