// Launching Debian's Chromium through the pinned playwright-core.
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

export const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";

/**
 * browserMissing returns a skip reason when Chromium is not installed
 * outside CI; in CI (CI=true) a missing browser throws, so the suite fails.
 */
export function browserMissing() {
  if (existsSync(CHROMIUM)) return undefined;
  const msg = `Chromium not found at ${CHROMIUM}: install it (apt-get install -y chromium, or make deps as root) or set CHROMIUM`;
  if (process.env.CI === "true" || process.env.CI === "1") throw new Error(`CI: ${msg}`);
  console.error(`\n!!! browser tests SKIPPED: ${msg}\n`);
  return msg;
}

/** launch starts headless Chromium on a fresh, empty profile; close() removes it. */
export async function launch() {
  const profile = mkdtempSync(join(tmpdir(), "turnstream-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
    viewport: { width: 1280, height: 860 },
  });
  return {
    context,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

/**
 * axe runs axe-core (the version pinned in package.json) on page and
 * returns its serious and critical violations as [{id, impact, help,
 * targets}]. The script is evaluated through the DevTools protocol, which
 * the page's Content-Security-Policy does not govern; the page's own
 * policy stays in force for everything else.
 */
export async function axe(page) {
  await page.evaluate(axeSource);
  return page.evaluate(async () => {
    const r = await window.axe.run(document, { resultTypes: ["violations"] });
    return r.violations
      .filter((v) => v.impact === "serious" || v.impact === "critical")
      .map((v) => ({ id: v.id, impact: v.impact, help: v.help, targets: v.nodes.map((n) => n.target.join(" ")).slice(0, 5) }));
  });
}

/**
 * cutByNavigation watches page so that a request the test's own reload or
 * goto cut off (in flight when the navigation began, then failed with
 * net::ERR_ABORTED) is told apart from a request that failed: leaving a page
 * mid-read is the test's doing, not the page's. Call it before the first
 * navigation; it returns cut(request), true for such a request.
 */
export function cutByNavigation(page) {
  const inFlight = new Set();
  const cut = new WeakSet();
  page.on("request", (r) => inFlight.add(r));
  page.on("requestfinished", (r) => inFlight.delete(r));
  page.on("requestfailed", (r) => inFlight.delete(r));
  for (const name of ["reload", "goto"]) {
    const navigate = page[name].bind(page);
    page[name] = (...args) => {
      for (const r of inFlight) cut.add(r);
      return navigate(...args);
    };
  }
  return (r) => cut.has(r) && r.failure()?.errorText === "net::ERR_ABORTED";
}
