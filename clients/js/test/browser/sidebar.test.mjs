// The chat page's conversation sidebar in headless Chromium against a real
// dev server: the caller's list (never another user's), a new chat shown
// first until its first answer gives it a title, switching, Load more,
// rename (Escape, a refused title, a saved one), search, thumbs on answers
// kept by history, delete after a confirmation (the open conversation's
// too), relative times, and the phone-width drawer. axe-core on the
// sidebar, the drawer and the dialog; screenshots go to
// clients/js/test-output/screenshots.
import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { TurnstreamClient } from "../../dist/turnstream.js";
import { startDevServer } from "../devserver.mjs";
import { here } from "../helpers.mjs";
import { axe, browserMissing, cutByNavigation, launch } from "./chromium.mjs";

const shots = join(here, "../test-output/screenshots");
const DESKTOP = { width: 1280, height: 800 };
const PHONE = { width: 390, height: 844 };
const DAY = 86_400_000;

const skip = browserMissing();

describe("conversation sidebar in Chromium", { skip }, () => {
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
  async function say(client, sessionId, input) {
    for await (const _ of client.submit({ sessionId, input }));
  }

  // open opens the page; a page error, a console error, a failed request, a
  // response with an error status or a request to another origin is a
  // problem, unless allowed matches it: a console error by its text, a failed
  // request as "METHOD /path why", a response as "STATUS METHOD /path".
  // Chromium's console line for an error status names no URL, so the
  // response, which does, is what is judged.
  async function open(query, { viewport = DESKTOP, allowed = /^$/, clock, context = browser.context } = {}) {
    const page = await context.newPage();
    const cut = cutByNavigation(page);
    await page.setViewportSize(viewport);
    if (clock !== undefined) await page.clock.setFixedTime(clock);
    const problems = [];
    const requests = [];
    page.on("pageerror", (e) => problems.push(e.message));
    page.on("request", (r) => {
      requests.push(`${r.method()} ${r.url()}`);
      if (!r.url().startsWith(`${srv.base}/`) && !r.url().startsWith("data:")) problems.push(`request to another origin: ${r.url()}`);
    });
    page.on("console", (m) => {
      if (m.type() !== "error" || /^Failed to load resource: the server responded with a status of \d+/.test(m.text())) return;
      if (!allowed.test(m.text())) problems.push(`console: ${m.text()}`);
    });
    page.on("response", (r) => {
      if (r.status() < 400) return;
      const what = `${r.status()} ${r.request().method()} ${new URL(r.url()).pathname}`;
      if (!allowed.test(what)) problems.push(`response: ${what}`);
    });
    page.on("requestfailed", (r) => {
      if (cut(r)) return;
      const path = new URL(r.url()).pathname;
      const why = r.failure()?.errorText ?? "";
      // A finished turn stream read through a reader is reported aborted (chat.test.mjs).
      if (why === "net::ERR_ABORTED" && r.method() === "POST" && path === "/turn/") return;
      const what = `${r.method()} ${path} ${why}`;
      if (!allowed.test(why) && !allowed.test(what)) problems.push(`request failed: ${what}`);
    });
    await page.goto(`${srv.base}/?${query}`);
    await page.waitForSelector('#status:not([data-state="loading"]):not([data-state="idle"])');
    await page.waitForSelector("#conversations li, #side-note:not(:empty)", { state: "attached" });
    return { page, problems, requests };
  }

  async function axeClean(page, screen) {
    const found = await axe(page);
    assert.deepEqual(found, [], `axe-core on "${screen}": ${JSON.stringify(found, null, 1)}`);
  }

  const titles = (page) => page.locator("#conversations li .title").allTextContents();
  const item = (id) => `#conversations li[data-id="${id}"]`;
  const current = (page) => page.locator('#conversations [aria-current="page"]');
  const sid = (page) => new URL(page.url()).searchParams.get("session");
  // waitTitles waits until the list shows exactly these titles, in order.
  const waitTitles = (page, want) =>
    page.waitForFunction((w) => JSON.stringify([...document.querySelectorAll("#conversations li .title")].map((e) => e.textContent)) === JSON.stringify(w), want);

  test("desktop: the caller's list, a new chat, switching, Load more, rename, search, thumbs, delete", async () => {
    const alice = as("alice");
    const bob = as("bob");
    for (let i = 0; i < 22; i++) await say(alice, `al-${i}`, `Filler conversation ${i}`);
    await say(alice, "al-bread", "How do I bake sourdough bread");
    await say(alice, "al-trip", "Plan a trip to Lisbon");
    await say(bob, "bob-secret", "Bob's secret recipe");
    const fillers = Array.from({ length: 22 }, (_, i) => `Filler conversation ${21 - i}`);

    // Opened without a conversation: a new chat, first in the list until sent.
    // The refused rename is a 400. Deleting the open conversation navigates
    // away, which aborts the page's own read of it if one is in flight, or
    // lets it end in a 404 when the delete won the race (hogged runs met
    // both): those are expected, no other failure.
    const { page, problems, requests } = await open("user=alice", {
      allowed: /^400 PATCH \/history\/sessions\/al-bread$|^404 GET \/history\/sessions\/al-bread$|^GET \/history\/sessions\/al-bread net::ERR_ABORTED$/,
    });
    const nav = page.getByRole("navigation", { name: "Conversations" });
    assert.equal(await nav.count(), 1, "a navigation landmark named by its heading");
    assert.equal(await page.textContent("#sidebar h2"), "Conversations");
    assert.equal(await page.isVisible("#menu"), false, "no menu button on a desktop");
    assert.deepEqual(await titles(page), ["New conversation", "Plan a trip to Lisbon", "How do I bake sourdough bread", ...fillers.slice(0, 18)]);
    assert.equal(await page.textContent(`${item(sid(page))} .when`), "not sent yet");
    assert.equal(await current(page).count(), 1);
    assert.equal(await current(page).locator(".title").textContent(), "New conversation");
    assert.equal(await page.locator(`${item(sid(page))} button`).count(), 0, "nothing to rename or delete before it is sent");
    assert.deepEqual([...new Set(await page.locator("#conversations time[datetime]").allTextContents())], ["just now"]);
    assert.equal(await page.getAttribute(`${item("al-trip")} a`, "href"), `${srv.base}/?user=alice&session=al-trip`);
    assert.ok(requests.some((r) => r === `GET ${srv.base}/history/sessions?limit=20`), requests.join("\n"));
    assert.equal(await page.isVisible("#more-sessions"), true);
    await axeClean(page, "sidebar");
    await page.screenshot({ path: join(shots, "sidebar-desktop.png") });

    // Load more: the rest, then no button. Never bob's.
    await page.click("#more-sessions");
    await waitTitles(page, ["New conversation", "Plan a trip to Lisbon", "How do I bake sourdough bread", ...fillers]);
    await page.waitForSelector("#more-sessions", { state: "hidden" });
    assert.ok(!(await page.content()).includes("secret recipe"), "alice's list never shows bob's session");

    // The first turn: the list refreshes when it ends, with the server's title.
    const garden = sid(page);
    await page.fill("#input", "Notes about the garden");
    await page.press("#input", "Enter");
    await page.waitForSelector('.turn:last-child .msg[data-role="assistant"][data-status="complete"]');
    await waitTitles(page, ["Notes about the garden", "Plan a trip to Lisbon", "How do I bake sourdough bread", ...fillers]);
    assert.equal(await page.getAttribute(`${item(garden)} a`, "aria-current"), "page");
    assert.equal(await page.textContent(`${item(garden)} .when`), "just now");
    assert.equal(await page.locator(`${item(garden)} button`).count(), 2, "now it can be renamed and deleted");
    assert.equal(await current(page).count(), 1);

    // Switching is a link to ?session=.
    await Promise.all([page.waitForURL((u) => u.searchParams.get("session") === "al-bread"), page.click(`${item("al-bread")} a`)]);
    await page.waitForSelector('.msg[data-role="assistant"][data-status="complete"]');
    assert.equal(await page.textContent('.msg[data-role="assistant"] .text'), "Echo: How do I bake sourdough bread");
    await page.waitForSelector(`${item("al-bread")} a[aria-current="page"]`);
    assert.equal(await current(page).count(), 1);

    // Rename: Escape keeps the title; a refused title says the server's message; Enter saves.
    const renameButton = `${item("al-bread")} [data-act="rename"]`;
    assert.equal(await page.getAttribute(renameButton, "aria-label"), "Rename “How do I bake sourdough bread”");
    await page.click(renameButton);
    const input = `${item("al-bread")} input.rename`;
    assert.equal(await page.evaluate(() => document.activeElement?.className), "rename");
    assert.equal(await page.inputValue(input), "How do I bake sourdough bread");
    await page.keyboard.type("Something else");
    await page.keyboard.press("Escape");
    assert.equal(await page.locator(input).count(), 0);
    assert.equal(await page.textContent(`${item("al-bread")} .title`), "How do I bake sourdough bread");
    assert.equal(await page.evaluate(() => document.activeElement?.dataset.act), "rename", "the focus is back on Rename");
    await page.keyboard.press("Enter"); // Rename, from the keyboard
    await page.fill(input, "x".repeat(121));
    await page.press(input, "Enter");
    await page.waitForSelector(`${item("al-bread")} .rename-error:not(:empty)`);
    assert.match(await page.textContent(`${item("al-bread")} .rename-error`), /^Request body is invalid\./);
    assert.equal(await page.getAttribute(input, "aria-invalid"), "true");
    await axeClean(page, "rename refused");
    await page.screenshot({ path: join(shots, "sidebar-rename-desktop.png") });
    await page.fill(input, "Sourdough notes");
    await page.press(input, "Enter");
    await page.waitForSelector(`${item("al-bread")} .title:text-is("Sourdough notes")`);
    assert.equal(await page.locator(input).count(), 0);
    assert.equal(await page.evaluate(() => document.activeElement?.dataset.act), "rename");
    assert.equal((await alice.sessions({ limit: 100 })).sessions.find((s) => s.sessionId === "al-bread")?.title, "Sourdough notes");
    assert.deepEqual((await titles(page)).slice(0, 3), ["Notes about the garden", "Plan a trip to Lisbon", "Sourdough notes"], "a rename keeps the place");

    // Search by title words (q=), then clearing brings the whole list back.
    await page.fill("#search", "SOURDOUGH");
    await waitTitles(page, ["Sourdough notes"]);
    assert.ok(requests.includes(`GET ${srv.base}/history/sessions?limit=20&q=SOURDOUGH`), "the search is the server's q");
    assert.equal(await page.textContent("#side-note"), "1 found");
    await axeClean(page, "search");
    await page.screenshot({ path: join(shots, "sidebar-search-desktop.png") });
    await page.fill("#search", "lisbon trip");
    await waitTitles(page, ["Plan a trip to Lisbon"]);
    await page.fill("#search", "nothing like this");
    await waitTitles(page, []);
    assert.equal(await page.textContent("#side-note"), "No conversation's title has those words.");
    await page.fill("#search", "");
    await waitTitles(page, ["Notes about the garden", "Plan a trip to Lisbon", "Sourdough notes", ...fillers.slice(0, 17)]);
    assert.equal(await page.isVisible("#more-sessions"), true);
    // Escape in the search box clears it.
    await page.fill("#search", "garden");
    await waitTitles(page, ["Notes about the garden"]);
    await page.press("#search", "Escape");
    assert.equal(await page.inputValue("#search"), "");
    await waitTitles(page, ["Notes about the garden", "Plan a trip to Lisbon", "Sourdough notes", ...fillers.slice(0, 17)]);

    // Thumbs: a toggle pair on the answer; pressing the pressed one takes the rating back.
    const answer = '.msg[data-role="assistant"]';
    const up = `${answer} [data-action="rate-up"]`;
    const down = `${answer} [data-action="rate-down"]`;
    assert.equal(await page.getAttribute(up, "aria-label"), "Good answer");
    assert.equal(await page.getAttribute(down, "aria-label"), "Bad answer");
    assert.deepEqual([await page.getAttribute(up, "aria-pressed"), await page.getAttribute(down, "aria-pressed")], ["false", "false"]);
    const rated = async () => (await alice.turns("al-bread")).items[0].feedback?.rating ?? null;
    const announced = (text) => page.waitForFunction((t) => document.getElementById("announce").textContent === t, text);
    await page.click(up);
    await announced("Rated a good answer.");
    assert.equal(await page.getAttribute(up, "aria-pressed"), "true");
    assert.equal(await page.evaluate(() => document.activeElement?.dataset.action), "rate-up", "the focus stays on the thumb");
    assert.equal(await rated(), "up");
    await axeClean(page, "thumbs");
    await page.screenshot({ path: join(shots, "thumbs-desktop.png") });
    await page.reload();
    await page.waitForSelector(`${up}[aria-pressed="true"]`); // history's feedback
    assert.equal(await page.getAttribute(down, "aria-pressed"), "false");
    await page.click(down);
    await announced("Rated a bad answer.");
    assert.deepEqual([await page.getAttribute(up, "aria-pressed"), await page.getAttribute(down, "aria-pressed")], ["false", "true"]);
    assert.equal(await rated(), "down");
    await page.click(down);
    await announced("Rating removed.");
    assert.deepEqual([await page.getAttribute(up, "aria-pressed"), await page.getAttribute(down, "aria-pressed")], ["false", "false"]);
    assert.equal(await rated(), null);

    // Bob sees his own list only.
    const b = await open("user=bob");
    assert.deepEqual(await titles(b.page), ["New conversation", "Bob's secret recipe"]);
    assert.ok(!(await b.page.content()).includes("Lisbon"));
    assert.deepEqual(b.problems, []);
    await b.page.close();

    // Delete (DELETE /history/sessions/{id}): a confirmation first; Cancel keeps it.
    await page.waitForSelector(item("al-trip"));
    const del = `${item("al-trip")} [data-act="delete"]`;
    await page.click(del);
    assert.equal(await page.isVisible("dialog#confirm"), true);
    assert.equal(await page.evaluate(() => document.activeElement?.id), "confirm-cancel", "the safe choice has the focus");
    assert.equal(await page.textContent("#confirm-text"), "“Plan a trip to Lisbon” and all of its messages will be deleted. This can't be undone.");
    await axeClean(page, "delete dialog");
    await page.screenshot({ path: join(shots, "sidebar-delete-desktop.png") });
    await page.click("#confirm-cancel");
    assert.equal(await page.isVisible("dialog#confirm"), false);
    assert.equal(await page.evaluate(() => document.activeElement?.dataset.act), "delete", "the focus is back on Delete");
    assert.equal(await page.locator(item("al-trip")).count(), 1);
    // Delete: gone from the list and from the server; the focus goes to its neighbour.
    await page.click(del);
    await page.click("#confirm-delete");
    // Gone, or refused (the dialog then says why, in place).
    await page.waitForFunction(() => !document.querySelector('#conversations li[data-id="al-trip"]') || !document.getElementById("confirm-error").hidden);
    assert.equal(await page.isHidden("#confirm-error"), true, `the delete was refused: ${await page.textContent("#confirm-error")}`);
    assert.equal(await page.isVisible("dialog#confirm"), false);
    assert.equal(await page.evaluate(() => document.activeElement?.closest("li")?.dataset.id), "al-bread");
    assert.ok(!(await alice.sessions({ limit: 100 })).sessions.some((s) => s.sessionId === "al-trip"));
    await assert.rejects(alice.turns("al-trip"), (e) => e.code === "SESSION_NOT_FOUND");
    // Deleting the open conversation opens a new chat.
    await page.click(`${item("al-bread")} [data-act="delete"]`);
    await Promise.all([page.waitForURL((u) => u.searchParams.get("session") !== "al-bread"), page.click("#confirm-delete")]);
    await page.waitForSelector('#status[data-state="ready"]');
    assert.equal(await page.isVisible("#empty"), true);
    await waitTitles(page, ["New conversation", "Notes about the garden", ...fillers.slice(0, 19)]);
    assert.equal(await current(page).locator(".title").textContent(), "New conversation");
    assert.ok(!(await alice.sessions({ limit: 100 })).sessions.some((s) => s.sessionId === "al-bread"));
    assert.deepEqual(problems, []);
    await axeClean(page, "after delete");
    await page.close();
  });

  test("relative times: minutes, yesterday, days, a date beyond a week", async (t) => {
    const cleo = as("cleo");
    await say(cleo, "cl-1", "An old conversation");
    const then = Date.parse((await cleo.sessions()).sessions[0].updatedAt);
    // A browser of its own: a fixed clock holds for every page of a context.
    const own = await launch();
    t.after(() => own.close());
    const when = async (offset) => {
      const { page, problems } = await open("user=cleo", { clock: then + offset, context: own.context });
      const text = await page.textContent(`${item("cl-1")} .when`);
      assert.equal(await page.getAttribute(`${item("cl-1")} .when`, "datetime"), new Date(then).toISOString());
      assert.deepEqual(problems, []);
      await page.close();
      return text;
    };
    assert.equal(await when(20_000), "just now");
    assert.match(await when(5 * 60_000 + 1000), /^5 min\.? ago$/);
    assert.equal(await when(DAY), "yesterday");
    assert.equal(await when(3 * DAY), "3 days ago");
    const d = new Date(then);
    const later = new Date(then + 10 * DAY);
    const want = d.toLocaleDateString("en", { day: "numeric", month: "short", year: d.getFullYear() === later.getFullYear() ? undefined : "numeric" });
    assert.equal(await when(10 * DAY), want);
  });

  test("phone: the sidebar is a drawer behind the menu button", async () => {
    const phil = as("phil");
    await say(phil, "ph-1", "First phone conversation");
    await say(phil, "ph-2", "Second phone conversation");
    const { page, problems } = await open("session=ph-2&user=phil", { viewport: PHONE });
    await page.waitForSelector('.msg[data-role="assistant"][data-status="complete"]');
    const menu = "#menu";
    assert.equal(await page.isVisible(menu), true);
    assert.equal(await page.getAttribute(menu, "aria-expanded"), "false");
    assert.equal(await page.getAttribute(menu, "aria-controls"), "sidebar");
    assert.equal(await page.getAttribute(menu, "aria-label"), "Conversations");
    assert.equal(await page.isVisible("#sidebar"), false, "closed, the drawer is out of sight");
    await axeClean(page, "drawer closed");
    await page.screenshot({ path: join(shots, "drawer-closed-phone.png") });
    const inDrawer = () => page.evaluate(() => document.activeElement?.closest("#sidebar") !== null);
    const focusedId = () => page.evaluate(() => document.activeElement?.id);

    // Open: the focus goes in (on the open conversation); the page behind is inert. Escape closes.
    await page.click(menu);
    await page.waitForSelector("#sidebar", { state: "visible" });
    assert.equal(await page.getAttribute(menu, "aria-expanded"), "true");
    assert.ok(await inDrawer(), "the focus is in the drawer");
    assert.equal(await page.evaluate(() => document.activeElement?.getAttribute("aria-current")), "page");
    assert.equal(await page.evaluate(() => document.getElementById("chat").inert), true);
    assert.deepEqual(await titles(page), ["Second phone conversation", "First phone conversation"]);
    await axeClean(page, "drawer open");
    await page.screenshot({ path: join(shots, "drawer-open-phone.png") });
    await page.keyboard.press("Escape");
    await page.waitForSelector("#sidebar", { state: "hidden" });
    assert.equal(await page.getAttribute(menu, "aria-expanded"), "false");
    assert.equal(await focusedId(), "menu", "the focus is back on the menu button");
    assert.equal(await page.evaluate(() => document.getElementById("chat").inert), false);

    // The close button closes it too, from the keyboard.
    await page.keyboard.press("Enter");
    await page.waitForSelector("#sidebar", { state: "visible" });
    assert.ok(await inDrawer());
    await page.focus("#close-sidebar");
    await page.keyboard.press("Enter");
    await page.waitForSelector("#sidebar", { state: "hidden" });
    assert.equal(await focusedId(), "menu");

    // Choosing the open conversation just closes it; another one opens it.
    await page.click(menu);
    await page.click(`${item("ph-2")} a`);
    await page.waitForSelector("#sidebar", { state: "hidden" });
    assert.equal(await focusedId(), "menu");
    assert.equal(sid(page), "ph-2");
    await page.click(menu);
    await Promise.all([page.waitForURL((u) => u.searchParams.get("session") === "ph-1"), page.click(`${item("ph-1")} a`)]);
    await page.waitForSelector('.msg[data-role="assistant"][data-status="complete"]');
    assert.equal(await page.isVisible("#sidebar"), false);
    assert.equal(await page.getAttribute(menu, "aria-expanded"), "false");
    assert.equal(await page.textContent('.msg[data-role="assistant"] .text'), "Echo: First phone conversation");

    // Rename works inside the drawer; Escape there cancels the rename, not the drawer.
    await page.click(menu);
    await page.click(`${item("ph-1")} [data-act="rename"]`);
    await page.keyboard.press("Escape");
    assert.equal(await page.isVisible("#sidebar"), true);
    assert.equal(await page.evaluate(() => document.activeElement?.dataset.act), "rename");
    // A desktop-wide window shows the sidebar as a column, the page usable.
    await page.setViewportSize(DESKTOP);
    assert.equal(await page.isVisible(menu), false);
    assert.equal(await page.isVisible("#sidebar"), true);
    // The page leaves the drawer when the width's media query reports the
    // change, an event that may come after the resize resolved.
    await page.waitForFunction(() => document.getElementById("chat").inert === false);
    await page.setViewportSize(PHONE);
    await page.waitForSelector("#sidebar", { state: "hidden" });
    assert.equal(await page.getAttribute(menu, "aria-expanded"), "false");
    await page.screenshot({ path: join(shots, "thumbs-phone.png") });
    assert.deepEqual(problems, []);
    await axeClean(page, "phone");
    await page.close();
  });
});
