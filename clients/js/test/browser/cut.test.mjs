// cutByNavigation, the browser tests' rule for a failed request, checked on
// a page of its own: a read a reload cuts off is the reload's doing, whether
// or not its answer had begun; a read the page itself aborts is a failure.
import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { browserMissing, cutByNavigation, launch } from "./chromium.mjs";

const skip = browserMissing();

// The page starts a read of /held?n=<load number> as it loads (and, asked,
// a read it aborts itself). /held answers headers only when told to, and
// never ends its body.
const PAGE = `<!doctype html><title>cut</title><script>
const n = Number(sessionStorage.n ?? 0) + 1; sessionStorage.n = n;
fetch("/held?n=" + n).then((r) => r.text()).catch(() => {});
window.selfAbort = () => { const c = new AbortController(); const p = fetch("/held?self", { signal: c.signal }).catch(() => {}); setTimeout(() => c.abort(), 200); return p; };
</script>`;

describe("cutByNavigation in Chromium", { skip }, () => {
  let server, base, browser;
  let headers = false; // whether /held sends its headers
  const arrived = [];

  before(async () => {
    server = createServer((req, res) => {
      if (req.url === "/") {
        res.writeHead(200, { "content-type": "text/html" }).end(PAGE);
        return;
      }
      arrived.push(req.url);
      if (headers) res.writeHead(200, { "content-type": "text/plain" }).write("a");
      req.on("close", () => res.destroy());
    });
    await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
    base = `http://127.0.0.1:${server.address().port}`;
    browser = await launch();
  });
  after(async () => {
    await browser?.close();
    server?.closeAllConnections();
    server?.close();
  });

  async function watched() {
    const page = await browser.context.newPage();
    const cut = cutByNavigation(page);
    const failed = [];
    page.on("requestfailed", (r) => failed.push({ url: new URL(r.url()).search, cut: cut(r) }));
    return { page, failed };
  }

  async function arrivedSoon(url) {
    for (let i = 0; i < 600 && !arrived.includes(url); i++) await new Promise((ok) => setTimeout(ok, 50));
    assert.ok(arrived.includes(url), `${url} did not reach the server`);
  }

  for (const answered of [false, true]) {
    test(`a read a reload cuts off ${answered ? "mid-answer" : "before its answer began"} is cut, not failed`, async () => {
      headers = answered;
      arrived.length = 0;
      const { page, failed } = await watched();
      await page.goto(`${base}/`);
      await arrivedSoon("/held?n=1");
      await page.reload();
      await arrivedSoon("/held?n=2");
      await page.close();
      const first = failed.filter((f) => f.url === "?n=1");
      assert.equal(first.length, 1, JSON.stringify(failed));
      assert.equal(first[0].cut, true, "the reload's cut read counted as a failure");
    });
  }

  test("a read the page aborts itself is a failure", async () => {
    headers = false;
    arrived.length = 0;
    const { page, failed } = await watched();
    await page.goto(`${base}/`);
    await page.evaluate(() => window.selfAbort());
    for (let i = 0; i < 600 && !failed.some((f) => f.url === "?self"); i++) await new Promise((ok) => setTimeout(ok, 50));
    await page.close();
    const self = failed.filter((f) => f.url === "?self");
    assert.equal(self.length, 1, JSON.stringify(failed));
    assert.equal(self[0].cut, false, "the page's own abort passed as cut by a navigation");
  });
});
