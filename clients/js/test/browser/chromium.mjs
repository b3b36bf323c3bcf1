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
 * cutByNavigation watches page so that a request a navigation cut off is
 * told apart from a request that failed: leaving a page mid-read is not the
 * page's failure. The navigations are the test's own reload or goto and the
 * page's own (a sign-in or sign-out redirect); a request is cut when it
 * failed with net::ERR_ABORTED and started before a navigation committed
 * that began before it failed, and a navigation's own document request when
 * a later navigation took its place. The browser's own start time of the
 * request decides, since Playwright reports requests to this process a
 * little late; a request cut before its response headers has no such time
 * (Playwright fills timing() from the response), and then the time its
 * request event reached this process stands in: later than the true start,
 * yet before the commit of a navigation that cut it, whose event comes
 * after it. Call it before the first navigation; it returns cut(request),
 * true for such a request, to be called from the requestfailed event.
 */
export function cutByNavigation(page) {
  const navs = []; // {start, commit, request}: wall-clock ms; request: the page's own navigation's
  const committed = () => {
    for (const n of navs) if (n.commit === Infinity) n.commit = Date.now();
  };
  page.on("framenavigated", (f) => {
    if (f === page.mainFrame()) committed();
  });
  const seen = new WeakMap(); // request -> wall-clock ms its event arrived
  const began = (r) => (r.timing().startTime > 0 ? r.timing().startTime : (seen.get(r) ?? 0));
  page.on("request", (r) => {
    seen.set(r, Date.now());
    if (r.isNavigationRequest() && r.frame() === page.mainFrame()) {
      navs.push({ start: began(r), commit: Infinity, request: r });
    }
  });
  for (const name of ["reload", "goto"]) {
    const navigate = page[name].bind(page);
    page[name] = (...args) => {
      navs.push({ start: Date.now(), commit: Infinity, request: null });
      return navigate(...args).finally(committed);
    };
  }
  return (r) => {
    if (r.failure()?.errorText !== "net::ERR_ABORTED") return false;
    const start = began(r);
    if (!(start > 0)) return false;
    if (r.isNavigationRequest()) return navs.some((n) => n.request !== r && n.start >= start);
    const now = Date.now();
    return navs.some((n) => n.request !== r && now >= n.start && start < n.commit);
  };
}
