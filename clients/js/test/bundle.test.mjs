// The committed demo bundle matches its sources, and the client and the
// page stay within their size budgets.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildClient, buildDemo, demoSize, DEMO_GZIP_BUDGET, signinSize, SIGNIN_GZIP_BUDGET, staleAssets, syntaxSize, SYNTAX_GZIP_BUDGET } from "../build.mjs";

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

test(`the scripts loaded on demand stay within their budgets (signin.js ${SIGNIN_GZIP_BUDGET / 1024} KiB, syntax.js ${SYNTAX_GZIP_BUDGET / 1024} KiB gzipped), with their libraries' notices`, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "turnstream-demo-size-"));
  try {
    await buildDemo(dir);
    const signin = signinSize(dir);
    const syntax = syntaxSize(dir);
    t.diagnostic(`signin.js ${signin} bytes gzip, syntax.js ${syntax} bytes gzip`);
    assert.ok(signin <= SIGNIN_GZIP_BUDGET, `signin.js: ${signin} bytes gzip, over the budget of ${SIGNIN_GZIP_BUDGET}`);
    assert.ok(syntax <= SYNTAX_GZIP_BUDGET, `syntax.js: ${syntax} bytes gzip, over the budget of ${SYNTAX_GZIP_BUDGET}`);
    assert.match(readFileSync(join(dir, "signin.js"), "utf8"), /Includes oidc-client-ts 3 \(Apache-2\.0/);
    assert.match(readFileSync(join(dir, "syntax.js"), "utf8"), /Includes highlight\.js 11 \(BSD-3-Clause License/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
