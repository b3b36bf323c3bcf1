// The committed demo bundle matches its sources, and the client stays
// within its size goal.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildClient, staleAssets } from "../build.mjs";

test("internal/demo/assets is a fresh build of clients/js", async () => {
  const stale = await staleAssets();
  assert.deepEqual(stale, [], "stale demo bundle: run make js-build and commit internal/demo/assets");
});

test("the client is at most 15 KiB minified and gzipped", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "turnstream-size-"));
  try {
    const size = await buildClient(dir);
    t.diagnostic(`turnstream.min.js: ${size.minified} bytes minified, ${size.gzip} bytes gzip`);
    assert.ok(size.gzip <= 15 * 1024, `${size.gzip} bytes gzip`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
