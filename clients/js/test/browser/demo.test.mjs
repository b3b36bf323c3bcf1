// The demo page in headless Chromium against real dev servers: a reply
// streams in, a stop ends it early, a reload mid-answer continues it (the
// resume route), a tool call shows its artifact, older
// history loads on scroll, and another user's session is an error in
// plain words. Screenshots of each state, at desktop and phone widths, go
// to clients/js/test-output/screenshots (git-ignored).
import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { copyFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { TurnstreamClient } from "../../dist/turnstream.js";
import { startDevServer } from "../devserver.mjs";
import { here } from "../helpers.mjs";
import { axe, browserMissing, launch } from "./chromium.mjs";

const shots = join(here, "../test-output/screenshots");
const DESKTOP = { width: 1280, height: 860 };
const PHONE = { width: 390, height: 844 };

const skip = browserMissing();

describe("demo page in Chromium", { skip }, () => {
  let slow, fast, still, browser;

  before(async () => {
    mkdirSync(shots, { recursive: true });
    // slow: an answer takes seconds, so it is seen streaming and can be
    // stopped; a stop is seen within one lease renewal (LEASE_DURATION/3).
    // still: slow too, without checkpoints, so without resume.
    [slow, fast, still] = await Promise.all([
      startDevServer({ ECHO_DELAY: "120ms", ECHO_CHUNK_RUNES: "2", LEASE_DURATION: "3s" }),
      startDevServer({ ECHO_DELAY: "0" }),
      startDevServer({ ECHO_DELAY: "120ms", ECHO_CHUNK_RUNES: "2", LEASE_DURATION: "3s", CHECKPOINT_INTERVAL: "0" }),
    ]);
    browser = await launch();
  });
  after(async () => {
    await browser?.close();
    await Promise.all([slow?.stop(), fast?.stop(), still?.stop()]);
  });

  // open opens the page; a console error is a problem unless allowed
  // matches it (a refusal the test provokes: the browser logs every
  // non-2xx answer). No test allows one of a new chat or a finished turn.
  async function open(base, query, viewport = DESKTOP, allowed = /^$/) {
    const page = await browser.context.newPage();
    await page.setViewportSize(viewport);
    const problems = [];
    page.on("pageerror", (e) => problems.push(e.message));
    // No request leaves the dev server's origin (no CDN, no network).
    page.on("request", (r) => {
      const u = r.url();
      if (!u.startsWith(`${base}/`) && !u.startsWith("data:")) problems.push(`request to another origin: ${u}`);
    });
    page.on("console", (m) => {
      if (m.type() === "error" && !allowed.test(m.text())) problems.push(`console: ${m.text()}`);
    });
    // Every text the newest assistant message shows, in order.
    await page.addInitScript(() => {
      window.__texts = [];
      new MutationObserver(() => {
        const all = document.querySelectorAll('.msg[data-role="assistant"] .text');
        const t = all[all.length - 1]?.textContent;
        if (t && window.__texts[window.__texts.length - 1] !== t) window.__texts.push(t);
      }).observe(document, { subtree: true, childList: true, characterData: true });
      // Every status the page said, in order.
      window.__states = [];
      new MutationObserver(() => {
        const s = document.querySelector("#status")?.getAttribute("data-state");
        if (s && window.__states[window.__states.length - 1] !== s) window.__states.push(s);
      }).observe(document, { subtree: true, attributes: true, attributeFilter: ["data-state"] });
    });
    await page.goto(`${base}/?${query}`);
    await page.waitForSelector('#status:not([data-state="loading"]):not([data-state="idle"])');
    return { page, problems };
  }

  // waitSaid waits for selector; a timeout says what the page showed
  // instead (its status, its error line, the problems so far).
  async function waitSaid(page, problems, selector) {
    try {
      await page.waitForSelector(selector, { timeout: 60_000 });
    } catch (e) {
      const said = await page.evaluate(() => {
        const s = document.querySelector("#status");
        return { states: window.__states, text: s?.textContent, error: document.querySelector("#error")?.textContent };
      });
      throw new Error(`${e.message.split("\n")[0]}; the page said ${JSON.stringify(said)}; problems ${JSON.stringify(problems)}`);
    }
  }

  // newChat opens the page as user and starts a conversation with New chat.
  async function newChat(base, user, viewport) {
    const opened = await open(base, `user=${user}`, viewport);
    // The sidebar has its list (no request of this page is cut off by New
    // chat's navigation); at phone width New chat is in the drawer the menu
    // button opens.
    await opened.page.waitForSelector("#conversations li", { state: "attached" });
    if (await opened.page.isVisible("#menu")) await opened.page.click("#menu");
    await Promise.all([opened.page.waitForURL((u) => u.searchParams.get("session") !== null), opened.page.click("#new-chat")]);
    await opened.page.waitForSelector('#status[data-state="ready"]');
    assert.equal(await opened.page.isVisible("#empty"), true, "a new conversation starts empty");
    assert.equal(await opened.page.isHidden("#error"), true);
    return opened;
  }

  async function send(page, text) {
    await page.fill("#input", text);
    await page.press("#input", "Enter");
  }

  const lastAssistant = '.turn:last-child .msg[data-role="assistant"]';

  // axeClean runs axe-core (pinned) on the page as it is: no serious or
  // critical violation.
  async function axeClean(page, screen) {
    const found = await axe(page);
    assert.deepEqual(found, [], `axe-core on "${screen}": ${JSON.stringify(found, null, 1)}`);
  }

  // finish checks the screen a test leaves with axe-core, then closes it:
  // every screen the tests visit is checked at least there.
  async function finish(page, screen = "the test's last screen") {
    await axeClean(page, screen);
    await page.close();
  }

  test("a message's reply streams in", async () => {
    const { page, problems } = await newChat(slow.base, "ann");
    await page.screenshot({ path: join(shots, "empty-desktop.png") });
    const input = "Streaming, a few characters at a time, into the page.";
    await send(page, input);
    await page.waitForFunction((sel) => {
      const el = document.querySelector(sel);
      return el?.dataset.status === "streaming" && el.textContent.length > 12;
    }, lastAssistant);
    assert.equal(await page.getAttribute("#status", "data-state"), "streaming");
    assert.equal(await page.isVisible("#stop"), true, "Stop is offered while the answer streams");
    await page.screenshot({ path: join(shots, "streaming-desktop.png") });
    await page.waitForSelector(`${lastAssistant}[data-status="complete"]`, { timeout: 60_000 });
    const final = `Echo: ${input}`;
    assert.equal(await page.textContent(`${lastAssistant} .text`), final);
    const texts = await page.evaluate(() => window.__texts);
    const partial = texts.filter((t) => t.length < final.length && final.startsWith(t));
    assert.ok(partial.length >= 3, `saw ${partial.length} partial texts before the whole answer`);
    assert.equal(texts.at(-1), final);
    assert.equal(await page.getAttribute("#status", "data-state"), "ready");
    assert.equal(await page.isHidden("#stop"), true);
    // Token counts only for whoever asks: Usage under the answer.
    assert.doesNotMatch(await page.textContent(`${lastAssistant}`), /tokens/);
    assert.doesNotMatch(await page.textContent(".foot"), /tokens/);
    const usage = page.locator(`${lastAssistant} [data-action="usage"]`);
    assert.equal(await usage.getAttribute("aria-expanded"), "false");
    await usage.click();
    assert.match(await page.textContent(`${lastAssistant} .actions .tokens`), /^\d+ in · \d+ out tokens$/);
    assert.equal(await page.locator(`${lastAssistant} [data-action="usage"]`).getAttribute("aria-expanded"), "true");
    assert.equal(await page.evaluate(() => document.activeElement?.dataset.action), "usage", "the focus stays on Usage");
    await page.screenshot({ path: join(shots, "complete-desktop.png") });
    await page.setViewportSize(PHONE);
    await page.screenshot({ path: join(shots, "complete-phone.png") });
    assert.deepEqual(problems, []);
    await finish(page);
  });

  test("the demo streams in compact mode and renders the whole answer", async () => {
    const { page, problems } = await newChat(slow.base, "cai");
    const modes = [];
    page.on("response", (r) => {
      if (r.request().method() === "POST" && new URL(r.url()).pathname === "/turn/") {
        modes.push([r.request().headers()["x-turnstream-stream-mode"], r.headers()["x-turnstream-stream-mode"]]);
      }
    });
    const input = "Compact mode: append lines carry this text between two complete snapshots. ".repeat(2).trim();
    await send(page, input);
    await page.waitForSelector(`${lastAssistant}[data-status="complete"]`, { timeout: 60_000 });
    const final = `Echo: ${input}`;
    assert.equal(await page.textContent(`${lastAssistant} .text`), final);
    assert.deepEqual(modes, [["compact", "compact"]], "asked for and answered in compact mode");
    const texts = await page.evaluate(() => window.__texts);
    const partial = texts.filter((t) => t.length < final.length && final.startsWith(t));
    assert.ok(partial.length >= 3, `saw ${partial.length} partial texts before the whole answer`);
    for (let i = 1; i < texts.length; i++) assert.ok(texts[i].length > texts[i - 1].length, `text ${i} grew`);
    assert.deepEqual(problems, []);
    await finish(page);
  });

  test("Stop ends the answer early", async () => {
    const { page, problems } = await newChat(slow.base, "ann");
    const input = "A long answer that would take a good while to stream. ".repeat(4).trim();
    await send(page, input);
    await page.waitForFunction((sel) => (document.querySelector(sel)?.textContent.length ?? 0) > 12, `${lastAssistant} .text`);
    await page.click("#stop");
    await page.waitForSelector('#status[data-state="stopped"]', { timeout: 60_000 });
    const shown = await page.textContent(`${lastAssistant} .text`);
    assert.ok(shown.length < `Echo: ${input}`.length, "stopped before the end");
    assert.ok(`Echo: ${input}`.startsWith(shown));
    assert.equal(await page.textContent(`${lastAssistant} .notice`), "Stopped.");
    assert.equal(await page.getAttribute(lastAssistant, "data-status"), "stopped");
    assert.match(await page.textContent(`${lastAssistant} .meta`), /stopped/);
    assert.equal(await page.textContent("#send"), "Send");
    assert.equal(await page.evaluate(() => document.activeElement?.id), "input", "the focus went to the message box, not the page");
    // History says "stopped" too.
    await page.reload();
    await page.waitForSelector(`${lastAssistant}[data-status="stopped"]`);
    assert.equal(await page.textContent(`${lastAssistant} .notice`), "Stopped.");
    await page.screenshot({ path: join(shots, "stopped-desktop.png") });
    assert.deepEqual(problems, []);
    await finish(page);
  });

  test("reload mid-answer and see the same answer continue", async (t) => {
    const { page, problems } = await newChat(slow.base, "ann");
    const input = "Reloaded while this answer is being written, and it simply goes on. ".repeat(3).trim();
    const final = `Echo: ${input}`;
    await send(page, input);
    const text = `${lastAssistant} .text`;
    await page.waitForFunction((sel) => (document.querySelector(sel)?.textContent.length ?? 0) > 12, text);
    const before = await page.textContent(text);
    const streams = [];
    page.on("request", (r) => r.url().includes("/stream") && streams.push(new URL(r.url())));
    await page.reload();
    // The same answer goes on growing here, not a notice from elsewhere.
    await page.waitForFunction(([sel, n]) => (document.querySelector(sel)?.textContent.length ?? 0) > n, [text, before.length]);
    // History's checkpoint may show more text before the resumed stream's
    // first line: the page says it is answering from the start, and offers
    // Stop once it follows the stream.
    await page.waitForSelector('#status[data-state="streaming"]');
    await page.waitForSelector("#stop:not([hidden])");
    assert.equal(await page.locator(".elsewhere").count(), 0);
    await page.screenshot({ path: join(shots, "resumed-desktop.png") });
    await page.waitForSelector(`${lastAssistant}[data-status="complete"]`, { timeout: 60_000 });
    assert.equal(await page.textContent(text), final);
    // Every text shown after the reload grew from the one before: no line twice, none lost.
    const texts = await page.evaluate(() => window.__texts);
    assert.ok(texts.length >= 2, `${texts.length} texts after the reload`);
    for (let i = 0; i < texts.length; i++) {
      assert.ok(final.startsWith(texts[i]), `text ${i} is part of the answer`);
      if (i > 0) assert.ok(texts[i].length > texts[i - 1].length, `text ${i} grew`);
    }
    assert.equal(await page.locator(".turn").count(), 1, "one turn");
    // It came from the resume route, after the sequence history had saved.
    assert.equal(streams.length, 1, streams.join(" "));
    assert.match(streams[0].pathname, /^\/turn\/sessions\/[^/]+\/turns\/[^/]+\/stream$/);
    assert.match(streams[0].search, /^(\?after=\d+)?$/);
    t.diagnostic(`resumed with ${streams[0].search || "no after"}, ${texts.length} texts after the reload`);
    assert.equal(await page.locator('.msg[data-role="user"]').count(), 1);
    await page.waitForSelector('#status[data-state="ready"]');
    assert.deepEqual(problems, []);
    await finish(page);
  });

  test("a page opened mid-answer follows it, and shows its stop", async () => {
    const ann = new TurnstreamClient({ turnURL: slow.turnURL, historyURL: slow.historyURL, headers: { Authorization: "Bearer dev.ann" } });
    // Long enough to run until it is stopped below.
    const input = "Opened in a second tab while this answer is written. ".repeat(8).trim();
    const turn = ann.submit({ sessionId: "b-reload", input });
    const it = turn[Symbol.asyncIterator]();
    await it.next(); // the turn is running
    const rest = (async () => { while (!(await it.next()).done); })();
    const { page, problems } = await open(slow.base, "session=b-reload&user=ann");
    await page.waitForSelector('#status[data-state="streaming"]');
    await page.waitForFunction((sel) => (document.querySelector(sel)?.textContent.length ?? 0) > 12, `${lastAssistant} .text`);
    await page.screenshot({ path: join(shots, "running-elsewhere-desktop.png") });
    await turn.stop();
    await rest;
    await waitSaid(page, problems, `${lastAssistant}[data-status="stopped"]`);
    assert.equal(await page.textContent(`${lastAssistant} .text`), turn.snapshot.payload.messages.at(-1).content, "the same state as the tab that stopped it");
    assert.equal(await page.textContent(`${lastAssistant} .notice`), "Stopped.");
    // The status follows once the stream has ended after its terminal
    // line: the same bound as the wait above, for a loaded machine.
    await waitSaid(page, problems, '#status[data-state="stopped"]');
    // The page keeps saying so while it watches the session: it asks for
    // the summary one tick at a time, so once the second answer after the
    // stop is in, the first tick's catch-up (history's view of the same
    // stopped turn) has been applied.
    const summary = (r) => r.request().method() === "GET" && new URL(r.url()).pathname.endsWith("/sessions/b-reload");
    await page.waitForResponse(summary);
    await page.waitForResponse(summary);
    assert.equal(await page.getAttribute("#status", "data-state"), "stopped");
    assert.deepEqual(problems, []);
    await finish(page);
  });

  test("without resume, a page opened mid-answer says so, then shows the saved answer", async () => {
    const ann = new TurnstreamClient({ turnURL: still.turnURL, historyURL: still.historyURL, headers: { Authorization: "Bearer dev.ann" } });
    // Long enough to run until it is stopped below.
    const input = "Opened in a second tab while this answer is written. ".repeat(8).trim();
    const turn = ann.submit({ sessionId: "b-still", input });
    const it = turn[Symbol.asyncIterator]();
    await it.next(); // the turn is running
    const rest = (async () => { while (!(await it.next()).done); })();
    const { page, problems } = await open(still.base, "session=b-still&user=ann");
    await page.waitForSelector('#status[data-state="streaming"]');
    assert.equal(await page.textContent("#status .text"), "An answer is being written…");
    await page.screenshot({ path: join(shots, "running-elsewhere-noresume-desktop.png") });
    await turn.stop();
    await rest;
    await page.waitForSelector(`${lastAssistant}[data-status="stopped"]`, { timeout: 60_000 });
    assert.ok(`Echo: ${input}`.startsWith(await page.textContent(`${lastAssistant} .text`)));
    assert.equal(await page.textContent(`${lastAssistant} .notice`), "Stopped.");
    await page.waitForSelector('#status[data-state="ready"]');
    assert.deepEqual(problems, []);
    await finish(page);
  });

  test("a tool call and its artifact reference are shown", async () => {
    const { page, problems } = await newChat(fast.base, "ann", PHONE);
    await page.screenshot({ path: join(shots, "empty-phone.png") });
    await page.setViewportSize(DESKTOP);
    await send(page, "/note Groceries: milk, eggs");
    await page.waitForSelector(".artifact");
    assert.equal(await page.getAttribute(".tool", "data-tool"), "workspace_note");
    assert.equal(await page.textContent(".tool .badge"), "complete");
    assert.match(await page.textContent(".tool .result"), /notes\/groceries\.md/);
    assert.equal(await page.getAttribute(".artifact", "data-path"), "notes/groceries.md");
    await send(page, "Thanks! Ünïcödé — and ✓ — come through intact.");
    await page.waitForSelector(`${lastAssistant}[data-status="complete"]`);
    assert.equal(await page.textContent(`${lastAssistant} .text`), "Echo: Thanks! Ünïcödé — and ✓ — come through intact.");
    await page.screenshot({ path: join(shots, "note-desktop.png") });
    await page.setViewportSize(PHONE);
    await page.screenshot({ path: join(shots, "note-phone.png") });
    // A reload shows the same conversation from history, artifacts included.
    await page.reload();
    await page.waitForSelector(".artifact");
    assert.equal(await page.locator(".turn").count(), 2);
    assert.deepEqual(problems, []);
    await finish(page);
  });

  // The pictures in docs/ (demo-desktop.png, demo-phone.png) are this
  // test's, written there when TURNSTREAM_DOCS_SCREENSHOTS=1 (make
  // docs-screenshots): a tool call with its artifact, a highlighted code
  // block, and a call waiting for approval, the card in view.
  test("the docs' screenshots: a tool call, highlighted code, an approval in view", async () => {
    const { page, problems } = await newChat(fast.base, "ann");
    await send(page, "/note Groceries: milk, eggs");
    await page.waitForSelector(".artifact");
    await page.waitForSelector('#status[data-state="ready"]');
    await send(page, ["How do I read a file in Go?", "```go", 'data, err := os.ReadFile("notes.txt")', "if err != nil {", "\treturn err // not found, say", "}", "```"].join("\n"));
    await page.waitForSelector(`${lastAssistant}[data-status="complete"] code.language-go span.hljs-keyword`, { timeout: 60_000 });
    await send(page, "/delete Groceries");
    await page.waitForSelector(`${approve}:not([aria-disabled="true"])`);
    await page.waitForSelector('#status[data-state="ready"]');
    const inView = async () => page.$eval(".decision", (d) => {
      const r = d.getBoundingClientRect();
      return r.top >= 0 && r.bottom <= window.innerHeight;
    });
    assert.equal(await inView(), true, "the approval card is in view at desktop width");
    await page.screenshot({ path: join(shots, "docs-desktop.png") });
    await page.setViewportSize(PHONE);
    await page.locator(".decision").scrollIntoViewIfNeeded(); // the picture shows the card
    await page.screenshot({ path: join(shots, "docs-phone.png") });
    if (process.env.TURNSTREAM_DOCS_SCREENSHOTS === "1") {
      copyFileSync(join(shots, "docs-desktop.png"), join(here, "../../../docs/demo-desktop.png"));
      copyFileSync(join(shots, "docs-phone.png"), join(here, "../../../docs/demo-phone.png"));
    }
    assert.deepEqual(problems, []);
    await finish(page);
  });

  const approve = '.decision button[data-decision="approve"]';
  const deny = '.decision button[data-decision="deny"]';
  const waitingTool = '.tool[data-tool="workspace_note_delete"]';

  // askDelete sends "/delete Shopping list" and waits for the call to wait
  // for approval, with its name, arguments and enabled buttons shown.
  async function askDelete(page) {
    await send(page, "/delete Shopping list");
    await page.waitForSelector(`${approve}:not([aria-disabled="true"])`);
    await page.waitForSelector('#status[data-state="ready"]');
    assert.equal(await page.textContent(`${waitingTool} .badge`), "needs approval");
    assert.equal(await page.textContent(`${waitingTool} .name`), "workspace_note_delete");
    assert.equal(await page.textContent(`${waitingTool} dt`), "title");
    assert.equal(await page.textContent(`${waitingTool} dd`), "Shopping list");
    assert.equal(await page.isEnabled(deny), true);
  }

  test("a tool call waiting for approval: Approve runs it and the answer continues", async () => {
    const { page, problems } = await newChat(fast.base, "ann");
    await send(page, "/note Shopping list: eggs");
    await page.waitForSelector(".artifact");
    await askDelete(page);
    // The card that needs the person is in view, not below the fold.
    const inView = async () => page.evaluate(() => {
      const card = document.querySelector(".decision").getBoundingClientRect();
      const log = document.getElementById("log").getBoundingClientRect();
      return card.top >= log.top && card.bottom <= log.bottom;
    });
    assert.equal(await inView(), true, "the approval buttons are in view when they appear");
    await axeClean(page, "approval pending");
    await page.screenshot({ path: join(shots, "approval-pending-desktop.png") });
    await page.setViewportSize(PHONE);
    await page.screenshot({ path: join(shots, "approval-pending-phone.png") });
    await page.setViewportSize(DESKTOP);
    // After a reload the history summary's pending interactions bring the
    // same buttons back.
    await page.reload();
    await page.waitForSelector(`${approve}:not([aria-disabled="true"])`);
    assert.equal(await page.locator(".decision").count(), 1);
    // A second window shows them too.
    const other = await open(fast.base, `session=${new URL(page.url()).searchParams.get("session")}&user=ann`);
    await other.page.waitForSelector(`${approve}:not([aria-disabled="true"])`);
    // Approve: the continuation streams; the focus stays where the buttons were.
    const decisions = [];
    page.on("request", (r) => r.method() === "POST" && r.url().endsWith("/turn/") && decisions.push(JSON.parse(r.postData())));
    await page.focus(approve);
    await page.keyboard.press("Enter");
    await page.waitForSelector(`${lastAssistant}[data-status="complete"]`);
    await page.waitForSelector('#status[data-state="ready"]');
    assert.equal(decisions.length, 1);
    assert.deepEqual(Object.keys(decisions[0].payload).sort(), ["confirmation", "input"]);
    assert.equal(decisions[0].payload.confirmation.decision, "approve");
    assert.match(decisions[0].payload.confirmation.token, /^cf[0-9a-f]{32}$/);
    assert.equal(await page.locator(".decision").count(), 0, "the buttons are gone");
    const cont = ".turn:last-child";
    assert.equal(await page.locator(`${cont} .msg[data-role="user"]`).count(), 0, "no user message the user never typed");
    assert.equal(await page.textContent(`${cont} ${waitingTool} .badge`), "complete");
    assert.equal(await page.textContent(`${cont} ${waitingTool} .result`), 'Deleted note "notes/shopping-list.md".');
    assert.notEqual((await page.textContent(`${lastAssistant} .text`)).trim(), "", "the model's answer follows");
    const asked = `.turn:nth-last-child(2) ${waitingTool}`;
    assert.equal(await page.textContent(`${asked} .badge`), "approved", "the asking call no longer says it waits");
    assert.equal(await page.textContent(`${asked} .decided`), "You approved this call; it runs in the turn below.");
    assert.equal(await page.evaluate(() => document.activeElement?.className), "decided", "the focus is on what became of the call");
    await axeClean(page, "approved");
    await page.screenshot({ path: join(shots, "approval-approved-desktop.png") });
    // The second window learns the decision by itself: no buttons, "approved".
    await other.page.waitForSelector(`${waitingTool} .badge[data-status="approved"]`, { timeout: 60_000 });
    assert.equal(await other.page.locator(".decision").count(), 0);
    await other.page.waitForSelector(`.turn:last-child ${waitingTool} .badge[data-status="complete"]`, { timeout: 60_000 });
    // A reload shows no buttons: nothing waits any more.
    await page.reload();
    await page.waitForSelector('#status[data-state="ready"]');
    assert.equal(await page.locator(".decision").count(), 0);
    assert.equal(await page.textContent(`${asked} .badge`), "approved", "history says so too");
    assert.deepEqual(problems, []);
    assert.deepEqual(other.problems, []);
    await finish(other.page);
    await finish(page);
  });

  test("a decision another window made first is refused in plain words", async () => {
    const ann = new TurnstreamClient({ turnURL: fast.turnURL, historyURL: fast.historyURL, headers: { Authorization: "Bearer dev.ann" } });
    for await (const _ of ann.submit({ sessionId: "b-twice", input: "/delete Shopping list" }));
    const { page, problems } = await open(fast.base, "session=b-twice&user=ann", DESKTOP, /status of 409|ERR_FAILED/);
    await page.waitForSelector(`${approve}:not([aria-disabled="true"])`);
    // This window hears nothing more from history: it cannot learn of the other decision.
    await page.route(/\/history\/sessions\/b-twice$/, (r) => r.abort());
    const { interactionId } = (await ann.session("b-twice")).pendingInteractions[0];
    for await (const _ of ann.decide({ sessionId: "b-twice", token: interactionId, decision: "deny" }));
    await page.click(approve);
    await page.waitForSelector(`${waitingTool} .notice`);
    assert.match(await page.textContent(`${waitingTool} .notice`), /already approved or denied/);
    assert.match(await page.textContent("#error"), /CONFIRMATION_DECIDED/);
    assert.equal(await page.locator(".decision").count(), 0);
    assert.equal(await page.evaluate(() => document.activeElement?.className), "notice", "the focus is on the refusal");
    await page.screenshot({ path: join(shots, "approval-decided-elsewhere-desktop.png") });
    assert.deepEqual(problems.filter((p) => !/ERR_FAILED|net::/.test(p)), []);
    await finish(page);
  });

  test("Deny: the tool does not run, the call reads denied (not an error), and the answer continues", async () => {
    const { page, problems } = await newChat(fast.base, "ann", PHONE);
    await askDelete(page);
    await page.click(deny);
    await page.waitForSelector(`${lastAssistant}[data-status="complete"]`);
    await page.waitForSelector('#status[data-state="ready"]');
    const cont = ".turn:last-child";
    assert.equal(await page.locator(`${cont} .msg[data-role="user"]`).count(), 0, "no \"Denied.\" the user never typed");
    assert.equal(await page.textContent(`${cont} ${waitingTool} .badge`), "denied");
    assert.equal(await page.getAttribute(`${cont} ${waitingTool} .badge`, "data-status"), "denied");
    assert.equal(await page.locator(`${cont} ${waitingTool} .notice.fail`).count(), 0, "a deliberate deny is no error");
    assert.equal(await page.textContent(`${cont} ${waitingTool} .decided`), "You denied this call; it did not run.");
    assert.equal(await page.locator(`${cont} ${waitingTool} .result`).count(), 0, "no result: it never ran");
    assert.equal(await page.locator(".decision").count(), 0);
    const asked = `.turn:nth-last-child(2) ${waitingTool}`;
    assert.equal(await page.textContent(`${asked} .badge`), "denied");
    assert.equal(await page.textContent(`${asked} .decided`), "You denied this call; it did not run.");
    await axeClean(page, "denied");
    await page.screenshot({ path: join(shots, "approval-denied-phone.png") });
    assert.deepEqual(problems, []);
    await finish(page);
  });

  test("deleting a note that was never saved says so", async () => {
    const { page, problems } = await newChat(fast.base, "ann");
    await askDelete(page);
    await page.click(approve);
    await page.waitForSelector(`${lastAssistant}[data-status="complete"]`);
    const call = `.turn:last-child ${waitingTool}`;
    assert.equal(await page.textContent(`${call} .badge`), "error");
    assert.equal(await page.textContent(`${call} .notice.fail`), 'There is no note "notes/shopping-list.md" in this conversation; nothing was deleted.');
    assert.equal(await page.locator(`${call} .result`).count(), 0);
    assert.deepEqual(problems, []);
    await finish(page);
  });

  test("a call superseded by a later message is no longer offered", async () => {
    const ann = new TurnstreamClient({ turnURL: fast.turnURL, historyURL: fast.historyURL, headers: { Authorization: "Bearer dev.ann" } });
    for await (const _ of ann.submit({ sessionId: "b-late", input: "/delete Shopping list" }));
    const { page, problems } = await open(fast.base, "session=b-late&user=ann");
    await page.waitForSelector(`${approve}:not([aria-disabled="true"])`);
    for await (const _ of ann.submit({ sessionId: "b-late", input: "Never mind." }));
    // The page learns it by itself: the later message appears, the buttons go.
    await page.waitForFunction(() => [...document.querySelectorAll('.msg[data-role="user"] .text')].some((e) => e.textContent === "Never mind."), null, { timeout: 60_000 });
    await page.waitForFunction(() => document.querySelectorAll(".decision").length === 0, null, { timeout: 60_000 });
    assert.equal(await page.textContent(`${waitingTool} .badge`), "not decided");
    // A message sent from the page supersedes a waiting call there too: its buttons go.
    await send(page, "/delete Trip plan");
    await page.waitForSelector(`${approve}:not([aria-disabled="true"])`);
    await send(page, "Never mind, keep it.");
    await page.waitForSelector(`${lastAssistant}[data-status="complete"]`);
    await page.waitForSelector('#status[data-state="ready"]');
    assert.equal(await page.locator(".decision").count(), 0);
    assert.deepEqual(problems, []);
    await finish(page);
  });

  test("older history loads as the reader scrolls up", async () => {
    const hal = new TurnstreamClient({ turnURL: fast.turnURL, historyURL: fast.historyURL, headers: { Authorization: "Bearer dev.hal" } });
    for (let i = 1; i <= 25; i++) for await (const _ of hal.submit({ sessionId: "b-hist", input: `message ${i}` }));
    const { page, problems } = await open(fast.base, "session=b-hist&user=hal");
    const count = () => page.locator(".turn").count();
    assert.equal(await count(), 10, "the newest page");
    assert.equal(await page.textContent('.turn:last-child .msg[data-role="user"] .text'), "message 25");
    assert.equal(await page.getAttribute("#history-edge", "data-state"), "more");
    await page.screenshot({ path: join(shots, "history-desktop.png") });
    for (const want of [20, 25]) {
      await page.evaluate(() => (document.getElementById("log").scrollTop = 0));
      await page.waitForFunction((n) => document.querySelectorAll(".turn").length === n, want);
    }
    await page.waitForSelector('#history-edge[data-state="start"]');
    const users = await page.locator('.msg[data-role="user"] .text').allTextContents();
    assert.deepEqual(users, Array.from({ length: 25 }, (_, i) => `message ${i + 1}`), "oldest first, each once");
    await page.evaluate(() => (document.getElementById("log").scrollTop = 0));
    await page.screenshot({ path: join(shots, "history-start-desktop.png") });
    await page.setViewportSize(PHONE);
    await page.screenshot({ path: join(shots, "history-phone.png") });
    assert.deepEqual(problems, []);
    await finish(page);
  });

  test("usage: what is left shows when little is, a quota reached mid-answer keeps it, the next message is refused", async () => {
    // One plain turn's tokens (the echo model's are deterministic), on the
    // fast server; then a server whose daily token quota is that and a
    // tenth more: after one such turn little is left.
    const probe = new TurnstreamClient({ turnURL: fast.turnURL, historyURL: fast.historyURL, headers: { Authorization: "Bearer dev.probe" } });
    const input = "How much is left of my quota?";
    let last;
    for await (const snap of probe.submit({ sessionId: "q-probe", input })) last = snap;
    const perTurn = last.payload.usage.totalTokens;
    assert.ok(perTurn > 0);
    const limit = perTurn + Math.max(1, Math.floor(perTurn / 10));
    const quota = await startDevServer({ ECHO_DELAY: "0", QUOTAS: JSON.stringify({ principal: { tokensPerDay: limit } }) });
    try {
      const { page, problems } = await newChat(quota.base, "quinn");
      assert.equal(await page.isHidden("#quota"), true, "nothing is shown while much is left");
      await send(page, input);
      await page.waitForSelector(`${lastAssistant}[data-status="complete"]`);
      await page.waitForSelector('#quota:not([hidden])[data-state="near"]');
      const left = limit - perTurn;
      assert.equal(await page.textContent("#quota"), `${left.toLocaleString("en-US")} of ${limit.toLocaleString("en-US")} tokens left today`);
      await page.screenshot({ path: join(shots, "usage-near-desktop.png") });
      // The next turn's first model call crosses the quota: it asked for a
      // tool call, which does not run; the turn ends there, its answer kept.
      await send(page, "/note Quota: this note is never written");
      await page.waitForSelector(`${lastAssistant}[data-status="error"]`);
      assert.match(await page.textContent(`${lastAssistant} > .extra > .notice.fail`), /stopped at a usage limit/);
      assert.equal(await page.textContent(".turn:last-child .tool .badge"), "error");
      assert.equal(await page.textContent(".turn:last-child .tool .notice.fail"), "Not run: a usage limit was reached.");
      await page.waitForSelector('#quota[data-state="at"]');
      assert.match(await page.textContent("#quota"), /^No tokens left today · more in \d+ (h|min|s)$/);
      // A message now is refused before it runs, in plain words.
      const turns = await page.locator(".turn").count();
      await send(page, "And one more?");
      await page.waitForSelector("#error:not([hidden])");
      assert.match(await page.textContent("#error"), /reached a usage limit/);
      assert.match(await page.textContent("#error"), /QUOTA_EXCEEDED/);
      // The refused message stays, marked not sent, with its text for a
      // retry once more is allowed.
      await page.waitForFunction((n) => document.querySelectorAll(".turn").length === n + 1 && document.getElementById("send").textContent === "Send", turns);
      assert.equal(await page.textContent('.turn:last-child .msg[data-role="user"] .state.fail'), "not sent");
      await page.screenshot({ path: join(shots, "usage-at-desktop.png") });
      await page.setViewportSize(PHONE);
      await page.screenshot({ path: join(shots, "usage-at-phone.png") });
      assert.deepEqual(
        problems.filter((p) => !/status of 429/.test(p)),
        [],
      );
      await page.close();
    } finally {
      await quota.stop();
    }
  });

  test("another user's session is an error in plain words", async () => {
    const ann = new TurnstreamClient({ turnURL: fast.turnURL, historyURL: fast.historyURL, headers: { Authorization: "Bearer dev.ann" } });
    for await (const _ of ann.submit({ sessionId: "b-private", input: "my secret plans" }));
    const { page, problems } = await open(fast.base, "session=b-private&user=eve", DESKTOP, /status of 404/);
    await page.waitForSelector("#error:not([hidden])");
    const text = await page.textContent("#error");
    assert.match(text, /doesn't exist, or it belongs to another account/);
    assert.match(text, /SESSION_NOT_FOUND/);
    assert.equal(await page.getAttribute("#status", "data-state"), "error");
    assert.equal(await page.locator(".turn").count(), 0);
    assert.ok(!(await page.content()).includes("secret plans"));
    await page.screenshot({ path: join(shots, "error-desktop.png") });
    await axeClean(page, "error");
    // Sending into it fails the same way, and says so; what was typed stays.
    await send(page, "let me in");
    await page.waitForSelector('.turn[data-state="failed"]');
    assert.match(await page.textContent("#error"), /belongs to another account/);
    assert.equal(await page.textContent('.turn[data-state="failed"] .msg[data-role="user"] .text'), "let me in");
    assert.match(await page.textContent('.turn[data-state="failed"] .meta'), /not sent/);
    assert.match(await page.textContent('.turn[data-state="failed"] .why'), /belongs to another account/);
    assert.equal(await page.textContent("#send"), "Send");
    await axeClean(page, "failed send");
    // Edit puts it back in the message box.
    await page.click('.turn[data-state="failed"] [data-action="edit-failed"]');
    assert.equal(await page.inputValue("#input"), "let me in");
    assert.equal(await page.locator(".turn").count(), 0);
    assert.equal(await page.evaluate(() => document.activeElement?.id), "input");
    await page.setViewportSize(PHONE);
    await page.screenshot({ path: join(shots, "error-phone.png") });
    assert.deepEqual(problems, []);
    await finish(page);
  });
});
