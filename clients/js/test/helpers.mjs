import { readFileSync, readdirSync } from "node:fs";
import { deflateSync } from "node:zlib";
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

/**
 * png returns the bytes of a real PNG of width x height pixels of one
 * colour (RGB, 8 bits), made here so that no binary fixture is needed;
 * the server checks an image's magic bytes.
 */
export function png(width = 2, height = 2, rgb = [220, 80, 40]) {
  const row = Buffer.concat([Buffer.from([0]), Buffer.from(Array.from({ length: width }, () => rgb).flat())]);
  const raw = Buffer.concat(Array.from({ length: height }, () => row));
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr.set([8, 2, 0, 0, 0], 8); // 8 bits, RGB, deflate, no filter, no interlace
  const chunk = (type, data) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const body = Buffer.concat([Buffer.from(type, "latin1"), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(body));
    return Buffer.concat([len, body, crc]);
  };
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", ihdr),
    chunk("IDAT", deflateSync(raw)),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}

function crc32(buf) {
  let c = 0xffffffff;
  for (const b of buf) {
    c ^= b;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  }
  return (c ^ 0xffffffff) >>> 0;
}
