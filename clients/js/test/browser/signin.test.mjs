// The chat page signing in with OpenID Connect, as a deployment configures
// it: the dev server with -signin local runs the functions in jwt mode
// behind the local issuer (internal/testidp, whose tokens have Amazon
// Cognito's shapes: the access token's audience is its client_id) and
// serves /config.json naming it. A person opening the page is sent to the
// issuer, signs in, chats with Bearer tokens, gets a new token before the
// old one expires, reloads mid-answer and sees it continue, and signs out.
import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { startDevServer } from "../devserver.mjs";
import { here } from "../helpers.mjs";
import { axe, browserMissing, cutByNavigation, launch } from "./chromium.mjs";

const shots = join(here, "../test-output/screenshots");
const skip = browserMissing();
const MINUTE = 60_000;

// within resolves to what promise resolves to, or fails saying what did
// not happen in ms (a bound on a wait, not a measure of speed).
function within(ms, promise, what) {
  let timer;
  const late = new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`not within ${ms} ms: ${what}`)), ms)));
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

describe("signing in with OpenID Connect in Chromium", { skip }, () => {
  let srv, browser;

  before(async () => {
    mkdirSync(shots, { recursive: true });
    // Tokens of 70 s: the page renews a minute before expiry, so about
    // 10 s after signing in.
    [srv, browser] = await Promise.all([
      startDevServer({ ECHO_DELAY: "60ms", ECHO_CHUNK_RUNES: "3" }, ["-signin", "local", "-signin-token-ttl", "70s"]),
      launch(),
    ]);
  });
  after(async () => {
    await browser?.close();
    await srv?.stop();
  });

  // open opens path on the page's origin, recording the Authorization
  // header of every request to the functions; page errors, console
  // errors, failed requests and error statuses are problems.
  async function open(path) {
    const page = await browser.context.newPage();
    const cut = cutByNavigation(page);
    await page.setViewportSize({ width: 1280, height: 800 });
    const problems = [];
    const bearers = [];
    let onRefresh;
    const refreshed = new Promise((resolve) => (onRefresh = resolve));
    page.on("pageerror", (e) => problems.push(e.message));
    page.on("console", (m) => {
      if (m.type() === "error" && !/^Failed to load resource/.test(m.text())) problems.push(`console: ${m.text()}`);
    });
    page.on("request", (r) => {
      const u = new URL(r.url());
      if (u.origin === srv.base && /^\/(turn|history|artifacts)\//.test(u.pathname)) bearers.push(r.headers().authorization ?? "");
      if (u.origin === srv.issuer && u.pathname === "/token" && /grant_type=refresh_token/.test(r.postData() ?? "")) onRefresh(r);
      if (u.origin !== srv.base && u.origin !== srv.issuer && u.protocol !== "data:") problems.push(`request to another origin: ${u.origin}`);
    });
    page.on("response", (r) => {
      if (r.status() >= 400) problems.push(`response: ${r.status()} ${r.request().method()} ${new URL(r.url()).pathname}`);
    });
    page.on("requestfailed", (r) => {
      if (cut(r)) return;
      const path = new URL(r.url()).pathname;
      // A turn stream read to its end through a reader is reported aborted (chat.test.mjs).
      const stream = (r.method() === "POST" && path === "/turn/") || (r.method() === "GET" && path.endsWith("/stream"));
      if (stream && r.failure()?.errorText === "net::ERR_ABORTED") return;
      problems.push(`request failed: ${r.method()} ${path} ${r.failure()?.errorText}`);
    });
    await page.goto(`${srv.base}${path}`);
    return { page, problems, bearers, refreshed };
  }

  // signIn answers the issuer's form as name and waits for the page.
  async function signIn(page, name) {
    await page.waitForSelector("#username");
    assert.equal(new URL(page.url()).origin, srv.issuer, "the page sent the person to the issuer");
    await page.fill("#username", name);
    await page.click('button[type="submit"]');
    await page.waitForSelector('#status[data-state="ready"]');
    assert.equal(new URL(page.url()).origin, srv.base);
  }

  async function axeClean(page, screen) {
    const found = await axe(page);
    assert.deepEqual(found, [], `axe-core on "${screen}": ${JSON.stringify(found, null, 1)}`);
  }

  const lastAnswer = '.turn:last-child .msg[data-role="assistant"]';

  async function send(page, text) {
    await page.fill("#input", text);
    await page.press("#input", "Enter");
  }

  test("sign in, chat, renew the token, reload mid-answer, sign out", async () => {
    const { page, problems, bearers, refreshed } = await open("/");
    await signIn(page, "ann");
    const after = new URL(page.url());
    assert.equal(after.searchParams.has("code") || after.searchParams.has("state"), false, "the issuer's answer is gone from the address");
    assert.equal(await page.textContent("#who"), "signed in as ann");
    await axeClean(page, "signed in");

    await send(page, "hello from ann");
    await page.waitForSelector(`${lastAnswer}[data-status="complete"]`, { timeout: MINUTE });
    assert.equal(await page.textContent(`${lastAnswer} .text`), "Echo: hello from ann");
    assert.ok(bearers.length > 0 && bearers.every((b) => /^Bearer [\w-]+\.[\w-]+\.[\w-]+$/.test(b)), `every request carries the access token: ${bearers}`);
    const first = bearers.at(-1);
    await page.screenshot({ path: join(shots, "signed-in-desktop.png") });

    // The page renews the token before it expires, with its refresh token,
    // and the next request carries the new one.
    const renewal = await within(2 * MINUTE, refreshed, "the page renewed its token");
    assert.equal((await renewal.response()).status(), 200);
    await send(page, "after the renewal");
    await page.waitForSelector(`${lastAnswer}[data-status="complete"]`, { timeout: MINUTE });
    assert.notEqual(bearers.at(-1), first, "the requests after the renewal carry the new token");

    // A reload mid-answer keeps the sign-in (this tab's storage) and the
    // answer continues.
    const long = "a longer message, so that the answer is still streaming when the page reloads";
    await send(page, long);
    await page.waitForFunction((sel) => (document.querySelector(sel)?.textContent ?? "").length > 8, `${lastAnswer} .text`);
    await page.reload();
    await page.waitForSelector(`${lastAnswer}[data-status="complete"]`, { timeout: MINUTE });
    assert.equal(await page.textContent(`${lastAnswer} .text`), `Echo: ${long}`);
    assert.equal(new URL(page.url()).origin, srv.base, "no new sign-in");
    assert.equal(await page.textContent("#who"), "signed in as ann");
    assert.equal(await page.locator(".turn").count(), 3);

    // Sign-out goes through the issuer and back; the page then asks for a
    // sign-in again. The page forgets the sign-in before it leaves, and a
    // request it makes meanwhile (its session watch reads every 2 s) must
    // wait for the sign-out, not start a sign-in whose navigation would
    // cancel it: the issuer's answer is held while the page has 5 s to
    // go to /authorize instead.
    let release, reached;
    const held = new Promise((resolve) => (release = resolve));
    const atLogout = new Promise((resolve) => (reached = resolve));
    await page.route(`${srv.issuer}/logout**`, async (route) => {
      reached();
      await held;
      await route.continue().catch(() => {}); // the page may have left
    });
    const answered = page
      .waitForResponse((r) => r.url().startsWith(`${srv.issuer}/logout`), { timeout: 2 * MINUTE })
      .then((r) => r.status(), (e) => e.message);
    // The click waits for the navigation it started, held here: it is
    // awaited once the issuer may answer.
    const clicked = page.click("#sign-out");
    clicked.catch(() => {});
    try {
      await within(MINUTE, atLogout, "the page went to the issuer's sign-out");
      const signInInstead = await page
        .waitForRequest((r) => r.url().startsWith(`${srv.issuer}/authorize`), { timeout: 5000 })
        .then(() => true, () => false);
      assert.equal(signInInstead, false, "a request during the sign-out started a sign-in");
    } finally {
      release();
    }
    await clicked;
    assert.equal(await answered, 302, "the issuer's sign-out answered the page");
    await page.waitForSelector("#username");
    assert.equal(new URL(page.url()).origin, srv.issuer, "signed out, the page asks for a sign-in");
    assert.deepEqual(problems, []);
    await page.close();
  });

  test("another person signs in to their own conversations", async () => {
    const { page, problems } = await open("/");
    await signIn(page, "bob");
    assert.equal(await page.textContent("#who"), "signed in as bob");
    await page.waitForSelector("#conversations li", { state: "attached" });
    assert.doesNotMatch(await page.textContent("#conversations"), /ann/, "bob sees none of ann's conversations");
    assert.deepEqual(problems, []);
    await page.close();
  });

  test("a refused sign-in is said in plain words", async () => {
    const { page } = await open("/?error=access_denied&state=not-ours");
    await page.waitForSelector("#error:not([hidden])");
    assert.equal(await page.textContent("#error"), "The sign-in was cancelled or refused.");
    assert.equal(new URL(page.url()).search, "", "the issuer's answer is gone from the address");
    await axeClean(page, "sign-in refused");
    await page.close();
  });
});
