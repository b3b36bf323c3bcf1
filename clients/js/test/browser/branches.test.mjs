// The chat page's versions of an answer in headless Chromium against a
// real dev server: an edited answer shows "‹ 2 / 2 ›" under the answer
// and under the question; the previous version shows at once and stays
// the conversation after a reload (the server switched too); a
// regeneration made on the page joins the versions; Fork opens a new
// conversation holding the turns up to that answer. axe-core on each
// state; screenshots go to clients/js/test-output/screenshots.
import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { TurnstreamClient } from "../../dist/turnstream.js";
import { startDevServer } from "../devserver.mjs";
import { here } from "../helpers.mjs";
import { axe, browserMissing, cutByNavigation, launch } from "./chromium.mjs";

const shots = join(here, "../test-output/screenshots");
const skip = browserMissing();

describe("versions of an answer in Chromium", { skip }, () => {
  let srv, browser;

  before(async () => {
    mkdirSync(shots, { recursive: true });
    [srv, browser] = await Promise.all([startDevServer({ ECHO_DELAY: "0" }), launch()]);
  });
  after(async () => {
    await browser?.close();
    await srv?.stop();
  });

  const as = (user) => new TurnstreamClient({ turnURL: srv.turnURL, historyURL: srv.historyURL, headers: { Authorization: `Bearer dev.${user}` } });
  async function say(client, sessionId, turnId, input, lineage) {
    for await (const _ of client.submit({ sessionId, turnId, input, lineage }));
  }

  // open opens the page as user on session; any page error, console
  // error, failed request or error status is a problem.
  async function open(user, session) {
    const page = await browser.context.newPage();
    const cut = cutByNavigation(page);
    await page.setViewportSize({ width: 1280, height: 800 });
    const problems = [];
    page.on("pageerror", (e) => problems.push(e.message));
    page.on("console", (m) => {
      if (m.type() === "error" && !/^Failed to load resource/.test(m.text())) problems.push(`console: ${m.text()}`);
    });
    page.on("response", (r) => {
      if (r.status() >= 400) problems.push(`response: ${r.status()} ${r.request().method()} ${new URL(r.url()).pathname}`);
    });
    page.on("requestfailed", (r) => {
      if (cut(r)) return;
      const path = new URL(r.url()).pathname;
      if (r.failure()?.errorText === "net::ERR_ABORTED" && r.method() === "POST" && path === "/turn/") return;
      problems.push(`request failed: ${r.method()} ${path} ${r.failure()?.errorText}`);
    });
    await page.goto(`${srv.base}/?user=${user}&session=${session}`);
    await page.waitForSelector('#status:not([data-state="loading"]):not([data-state="idle"])');
    return { page, problems };
  }

  async function axeClean(page, screen) {
    const found = await axe(page);
    assert.deepEqual(found, [], `axe-core on "${screen}": ${JSON.stringify(found, null, 1)}`);
  }

  const lastTurn = (page) => page.locator("#turns .turn").last();
  const answerVersions = (page) => lastTurn(page).locator('[role="group"][aria-label="Versions of this answer"] .count');

  test("switch between versions, regenerate, fork", async () => {
    const hal = as("hal");
    await say(hal, "v-s", "v1", "first question");
    await say(hal, "v-s", "v2", "second question");
    await say(hal, "v-s", "v3", "second question, edited", { operation: "edit", parentTurnId: "v2", sourceMessageId: "v2.u" });

    const { page, problems } = await open("hal", "v-s");
    await page.waitForSelector("#turns .turn >> nth=1");
    assert.equal(await answerVersions(page).textContent(), "2 / 2");
    assert.equal(await lastTurn(page).locator('[aria-label="Versions of this message"] .count').textContent(), "2 / 2", "an edit shows the versions under the question too");
    assert.equal(await lastTurn(page).locator('[data-action="version-next"]').first().getAttribute("aria-disabled"), "true");
    await axeClean(page, "an edited answer");
    await page.screenshot({ path: join(shots, "versions-desktop.png") });

    // The previous version at once, then the server's select.
    const selected = page.waitForResponse((r) => r.request().method() === "POST" && r.url().endsWith("/turns/v2/select"));
    await lastTurn(page).getByRole("button", { name: "Previous version of this answer" }).click();
    await page.waitForFunction(() => document.querySelector("#turns .turn:last-child")?.dataset.turn === "v2");
    assert.match(await lastTurn(page).textContent(), /Echo: second question(?!, edited)/);
    assert.equal((await selected).status(), 204);
    assert.equal(await answerVersions(page).textContent(), "1 / 2");
    await page.reload();
    await page.waitForFunction(() => document.querySelector("#turns .turn:last-child")?.dataset.turn === "v2");
    assert.equal(await answerVersions(page).textContent(), "1 / 2");
    const turns = (await hal.turns("v-s", { order: "asc" })).items.map((t) => t.turnId);
    assert.deepEqual(turns, ["v1", "v2"]);

    // A regeneration on the page joins the versions.
    await lastTurn(page).getByRole("button", { name: "Regenerate this answer" }).click();
    await page.waitForFunction(() => document.querySelector("#turns .turn:last-child .versions .count")?.textContent === "3 / 3");
    await axeClean(page, "a regenerated answer");

    // Fork at the first answer: a new conversation holding it alone.
    await page.locator("#turns .turn").first().getByRole("button", { name: "Fork into a new chat from here" }).click();
    await page.waitForURL((u) => u.searchParams.get("session") !== "v-s");
    await page.waitForSelector('#status:not([data-state="loading"]):not([data-state="idle"])');
    await page.waitForSelector("#turns .turn");
    assert.equal(await page.locator("#turns .turn").count(), 1);
    assert.match(await page.locator("#turns .turn").first().textContent(), /Echo: first question/);
    const forked = new URL(page.url()).searchParams.get("session");
    const list = (await hal.sessions()).sessions.find((s) => s.sessionId === forked);
    assert.equal(list?.title, "Fork of first question");
    await axeClean(page, "a fork");
    assert.deepEqual(problems, []);
    await page.close();
  });
});
