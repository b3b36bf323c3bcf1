// The demo page's attachments in headless Chromium against a dev server:
// files added by the attach button, by paste and by drop, each uploaded at
// once with its progress shown, a send that waits for an upload in flight,
// the echo model's description of the files and their thumbnails in the
// sent message (and again from history after a reload, and in a
// regenerated turn, which names the same files), a refused file
// that says why and sends nothing, and axe-core on the screens. The PNGs
// are made by the test (helpers.mjs png): the server checks their magic
// bytes.
import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { startDevServer } from "../devserver.mjs";
import { here, png } from "../helpers.mjs";
import { axe, browserMissing, cutByNavigation, launch } from "./chromium.mjs";

const shots = join(here, "../test-output/screenshots");
const MINUTE = 60_000;

const skip = browserMissing();

describe("demo chat attachments in Chromium", { skip }, () => {
  let srv, browser;

  before(async () => {
    mkdirSync(shots, { recursive: true });
    srv = await startDevServer({ ECHO_DELAY: "10ms", ECHO_CHUNK_RUNES: "6" });
    browser = await launch();
  });
  after(async () => {
    await browser?.close();
    await srv?.stop();
  });

  // newChat opens a new conversation of user; as in chat.test.mjs, every
  // console error, failed request, page error or request to another origin
  // is a problem unless allowed matches it (the streams' ERR_ABORTED
  // aside: see there).
  async function newChat(user, { allowed = /^$/ } = {}) {
    const page = await browser.context.newPage();
    const cut = cutByNavigation(page);
    const problems = [];
    const requests = [];
    page.on("pageerror", (e) => problems.push(e.message));
    page.on("request", (r) => {
      const u = r.url();
      requests.push(`${r.method()} ${new URL(u).pathname}`);
      if (!u.startsWith(`${srv.base}/`) && !u.startsWith("data:")) problems.push(`request to another origin: ${u}`);
    });
    page.on("console", (m) => {
      if (m.type() === "error" && !allowed.test(m.text())) problems.push(`console: ${m.text()}`);
    });
    page.on("requestfailed", (r) => {
      if (cut(r)) return;
      const why = r.failure()?.errorText ?? "";
      const path = new URL(r.url()).pathname;
      const stream = (r.method() === "POST" && path === "/turn/") || (r.method() === "GET" && path.endsWith("/stream"));
      if (stream && why === "net::ERR_ABORTED") return;
      if (!allowed.test(why)) problems.push(`request failed: ${r.method()} ${path} ${why}`);
    });
    await page.goto(`${srv.base}/?user=${user}`);
    await page.waitForSelector("#conversations li", { state: "attached" });
    await Promise.all([page.waitForURL((u) => u.searchParams.get("session") !== null), page.click("#new-chat")]);
    await page.waitForSelector('#status[data-state="ready"]');
    requests.length = 0;
    return { page, problems, requests };
  }

  async function finish(page, screen) {
    const found = await axe(page);
    assert.deepEqual(found, [], `axe-core on "${screen}": ${JSON.stringify(found, null, 1)}`);
    await page.close();
  }

  const chip = (name, state) => `#chips .chip[data-name="${name}"]${state ? `[data-state="${state}"]` : ""}`;
  const lastAssistant = '.turn:last-child .msg[data-role="assistant"]';
  const sentImages = '.msg[data-role="user"] .files img.thumb';

  // thumbnails returns the sent message's images as [alt, loaded].
  const thumbnails = (page) =>
    page.$$eval(sentImages, (imgs) => imgs.map((i) => [i.alt, i.complete && i.naturalWidth > 0]));

  test("attach by the button and by paste, progress while the storage holds the upload, send waits for it; thumbnails in the sent message and after a reload", async () => {
    const { page, problems, requests } = await newChat("ada");
    const cat = png(8, 6);
    const pasted = png(3, 3, [0, 128, 255]);

    // The storage's answer to the first upload is held until the test lets it go.
    let release;
    const held = new Promise((r) => (release = r));
    let holding = true;
    await page.route(/\/uploads\//, async (route) => {
      if (holding) {
        holding = false;
        await held;
      }
      await route.continue();
    });

    await page.setInputFiles("#files", { name: "cat.png", mimeType: "image/png", buffer: cat });
    await page.waitForSelector(`${chip("cat.png", "uploading")} progress`);
    assert.equal(await page.getAttribute(`${chip("cat.png")} progress`, "aria-label"), "Uploading cat.png");
    assert.equal(await page.getAttribute(`${chip("cat.png")} button`, "aria-label"), "Remove cat.png");
    assert.match(await page.getAttribute(`${chip("cat.png")} img`, "src"), /^data:image\/png;base64,/);
    const found = await axe(page);
    assert.deepEqual(found, [], `axe-core on "uploading": ${JSON.stringify(found, null, 1)}`);

    // An image pasted into the message box becomes a chip of its own.
    await page.evaluate((bytes) => {
      const dt = new DataTransfer();
      dt.items.add(new File([new Uint8Array(bytes)], "pasted.png", { type: "image/png" }));
      const ev = new ClipboardEvent("paste", { clipboardData: dt, bubbles: true, cancelable: true });
      document.getElementById("input").dispatchEvent(ev);
    }, [...pasted]);
    await page.waitForSelector(chip("pasted.png", "ready"));
    assert.equal(await page.inputValue("#input"), "", "the pasted image is not text");
    await page.screenshot({ path: join(shots, "attach-uploading-desktop.png") });

    // Send while cat.png is still held: nothing goes until its upload ends.
    await page.fill("#input", "What are these?");
    await page.press("#input", "Enter");
    await page.waitForTimeout(300);
    assert.ok(!requests.includes("POST /turn/"), `no submit before the uploads are done: ${requests}`);
    assert.equal(await page.inputValue("#input"), "What are these?");
    release();
    await page.waitForSelector(`${lastAssistant}[data-status="complete"]`, { timeout: MINUTE });
    const answer = await page.textContent(`${lastAssistant} .text`);
    assert.match(answer, new RegExp(`Attached: cat\\.png \\(image/png, ${cat.length} bytes\\)`));
    assert.match(answer, new RegExp(`Attached: pasted\\.png \\(image/png, ${pasted.length} bytes\\)`));
    assert.equal(await page.isHidden("#chips"), true, "the chips went with the message");
    assert.equal(await page.inputValue("#input"), "");
    await page.waitForFunction((sel) => [...document.querySelectorAll(sel)].filter((i) => i.complete && i.naturalWidth > 0).length === 2, sentImages);
    assert.deepEqual(await thumbnails(page), [["cat.png", true], ["pasted.png", true]]);
    assert.equal(requests.filter((r) => r === "POST /uploads/local").length, 2);

    // After a reload the message comes from history, its files with it.
    await page.reload();
    await page.waitForSelector(`${lastAssistant}[data-status="complete"]`);
    await page.waitForFunction((sel) => [...document.querySelectorAll(sel)].filter((i) => i.complete && i.naturalWidth > 0).length === 2, sentImages);
    assert.deepEqual(await thumbnails(page), [["cat.png", true], ["pasted.png", true]]);
    await page.screenshot({ path: join(shots, "attach-sent-desktop.png") });

    // Regenerate replaces the turn with one that names the same files.
    const firstTurn = await page.getAttribute(".turn:last-child", "data-turn");
    await page.click(`${lastAssistant} [data-action="regenerate"]`);
    await page.waitForFunction((id) => document.querySelector(".turn:last-child")?.dataset.turn !== id &&
      document.querySelector('.turn:last-child .msg[data-role="assistant"]')?.dataset.status === "complete", firstTurn, { timeout: MINUTE });
    assert.equal(await page.locator(".turn").count(), 1);
    assert.match(await page.textContent(`${lastAssistant} .text`), /Attached: cat\.png[^]*Attached: pasted\.png/);
    await page.waitForFunction((sel) => [...document.querySelectorAll(sel)].filter((i) => i.complete && i.naturalWidth > 0).length === 2, sentImages);
    assert.deepEqual(problems, []);
    await finish(page, "sent with images, reloaded, regenerated");
  });

  test("a refused file says why and sends nothing; a dropped document can be removed, and sent", async () => {
    const { page, problems, requests } = await newChat("bo", { allowed: /status of 415/ });
    await page.setInputFiles("#files", { name: "drawing.svg", mimeType: "image/svg+xml", buffer: Buffer.from("<svg xmlns='http://www.w3.org/2000/svg'/>") });
    await page.waitForSelector("#attach-error:not([hidden])");
    assert.match(await page.textContent("#attach-error"), /^drawing\.svg wasn't attached: only images \(PNG, JPEG, GIF, WebP\)/);
    assert.equal(await page.getAttribute("#attach-error", "role"), "alert");
    assert.equal(await page.locator("#chips .chip").count(), 0);
    assert.ok(requests.some((r) => /^POST \/artifacts\/sessions\/[^/]+\/uploads$/.test(r)), `the file was declared: ${requests}`);
    assert.ok(!requests.includes("POST /uploads/local") && !requests.includes("POST /turn/"), `nothing uploaded or sent: ${requests}`);

    // A document dropped on the composer, removed, dropped again and sent.
    const drop = (name, text) =>
      page.evaluate(([name, text]) => {
        const dt = new DataTransfer();
        dt.items.add(new File([text], name, { type: "text/markdown" }));
        const form = document.getElementById("composer");
        form.dispatchEvent(new DragEvent("dragover", { dataTransfer: dt, bubbles: true, cancelable: true }));
        form.dispatchEvent(new DragEvent("drop", { dataTransfer: dt, bubbles: true, cancelable: true }));
      }, [name, text]);
    await drop("notes.md", "# Notes\n");
    await page.waitForSelector(chip("notes.md", "ready"));
    assert.equal(await page.isHidden("#attach-error"), true, "a new file clears the refusal");
    assert.match(await page.textContent(`${chip("notes.md")} .size`), /^8 B$/);
    await page.click(`${chip("notes.md")} button`);
    assert.equal(await page.locator("#chips .chip").count(), 0);
    assert.equal(await page.evaluate(() => document.activeElement?.id), "input", "the focus goes back to the message box");

    await drop("todo.md", "- milk\n- eggs\n");
    await page.waitForSelector(chip("todo.md", "ready"));
    await page.fill("#input", "Read this");
    await page.press("#input", "Enter");
    await page.waitForSelector(`${lastAssistant}[data-status="complete"]`, { timeout: MINUTE });
    assert.match(await page.textContent(`${lastAssistant} .text`), /Attached: todo\.md \(text\/markdown, 14 bytes\)/);
    assert.doesNotMatch(await page.textContent(`${lastAssistant} .text`), /notes\.md/, "the removed file was not sent");
    assert.deepEqual(await page.locator('.msg[data-role="user"] .files .file .name').allTextContents(), ["todo.md"]);
    assert.deepEqual(problems, []);
    await finish(page, "document sent");
  });
});
