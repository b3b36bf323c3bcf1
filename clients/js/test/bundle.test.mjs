// The committed demo bundle matches its sources, and the client and the
// page stay within their size budgets.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildClient, buildDemo, demoSize, DEMO_GZIP_BUDGET, staleAssets } from "../build.mjs";

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

test(`the demo page (index.html, app.css, app.js) is at most ${DEMO_GZIP_BUDGET / 1024} KiB gzipped, with its libraries' notices`, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "turnstream-demo-size-"));
  try {
    await buildDemo(dir);
    const size = demoSize(dir);
    t.diagnostic(`demo page gzip: ${JSON.stringify(size.files)}, ${size.total} bytes in all (budget ${DEMO_GZIP_BUDGET})`);
    assert.ok(size.total <= DEMO_GZIP_BUDGET, `${size.total} bytes gzip, over the budget of ${DEMO_GZIP_BUDGET}`);
    const js = readFileSync(join(dir, "app.js"), "utf8");
    assert.match(js, /Includes marked \d+ \(MIT License/);
    assert.match(js, /@license DOMPurify/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
