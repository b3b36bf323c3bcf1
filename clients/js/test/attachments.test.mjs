// uploadAttachment and attachmentDownload against a dev server (its
// in-memory upload store checks the signed form as S3 does), a submit
// naming the upload, and the client-side checks.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import {
  attachmentDownload,
  HTTPError,
  mediaTypeOf,
  TurnstreamClient,
  uploadAttachment,
} from "../dist/turnstream.js";
import { createServer } from "node:http";
import { startDevServer } from "./devserver.mjs";
import { png } from "./helpers.mjs";

let srv;

const as = (user, extra = {}) =>
  new TurnstreamClient({
    turnURL: srv.turnURL,
    historyURL: srv.historyURL,
    artifactsURL: srv.artifactsURL,
    headers: { Authorization: `Bearer dev.${user}` },
    ...extra,
  });

before(async () => {
  srv = await startDevServer({ ECHO_DELAY: "5ms", ECHO_CHUNK_RUNES: "8" });
});
after(async () => {
  await srv?.stop();
});

test("an image uploads with progress to its size, and a submit sends it", async () => {
  const alice = as("alice");
  const bytes = png(4, 3);
  const file = new File([bytes], "cat.png", { type: "image/png" });
  const seen = [];
  const id = await uploadAttachment(alice, { sessionId: "att-a", file, onProgress: (sent, total) => seen.push([sent, total]) });
  assert.match(id, /^[A-Za-z0-9][A-Za-z0-9._:-]*$/);
  assert.deepEqual(seen.at(-1), [bytes.length, bytes.length], "progress reaches the total");
  for (let i = 1; i < seen.length; i++) assert.ok(seen[i][0] > seen[i - 1][0], "progress only goes forward");

  const d = await attachmentDownload(alice, "att-a", id);
  assert.deepEqual({ ...d, url: undefined, expiresAt: undefined }, { attachmentId: id, url: undefined, expiresAt: undefined, mediaType: "image/png", filename: "cat.png", size: bytes.length });
  const got = await fetch(d.url);
  assert.equal(got.status, 200);
  assert.deepEqual(Buffer.from(await got.arrayBuffer()), bytes, "the signed URL reads the very bytes");

  let last;
  for await (const s of alice.submit({ sessionId: "att-a", input: "What is in this picture?", attachments: [id] })) last = s;
  assert.equal(last.payload.status, "complete");
  const [user, answer] = last.payload.messages;
  assert.deepEqual(user.parts?.filter((p) => p.type !== "text"), [{ type: "image", source: `attachment:${id}`, mimeType: "image/png" }]);
  assert.ok(answer.content.includes(`Attached: cat.png (image/png, ${bytes.length} bytes)`), answer.content);

  // History has the part too, and the same turn cannot name it again.
  const page = await alice.turns("att-a", { limit: 1 });
  assert.deepEqual(page.items[0].messages[0].parts?.find((p) => p.type === "image")?.source, `attachment:${id}`);
  await assert.rejects(drain(alice.submit({ sessionId: "att-a", input: "again", attachments: [id] })), (e) => e instanceof HTTPError && e.code === "ATTACHMENT_INVALID");
});

test("storageURL maps the upload form's URL and a download's, as a CDN routing the storage under another path needs", async () => {
  // A proxy that serves the dev server's /uploads/ under /store/, as the
  // stack's CloudFront distribution serves the bucket under /uploads/.
  const seen = [];
  const proxy = createServer(async (req, res) => {
    seen.push(`${req.method} ${req.url.split("?")[0]}`);
    const target = new URL(req.url.replace(/^\/store\//, "/uploads/"), srv.base);
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const up = await fetch(target, { method: req.method, headers: { "content-type": req.headers["content-type"] ?? "" }, body: req.method === "POST" ? Buffer.concat(chunks) : undefined });
    res.writeHead(up.status, { "content-type": up.headers.get("content-type") ?? "application/octet-stream" });
    res.end(Buffer.from(await up.arrayBuffer()));
  });
  await new Promise((r) => proxy.listen(0, "127.0.0.1", r));
  try {
    const base = `http://127.0.0.1:${proxy.address().port}`;
    const mapped = [];
    const alice = as("alice", {
      storageURL: (u) => {
        const x = new URL(u);
        mapped.push(x.pathname);
        return `${base}/store/${x.pathname.replace(/^\/uploads\//, "")}${x.search}`;
      },
    });
    const bytes = png(2, 2);
    const id = await uploadAttachment(alice, { sessionId: "att-map", file: new File([bytes], "dot.png", { type: "image/png" }) });
    const d = await attachmentDownload(alice, "att-map", id);
    assert.ok(d.url.startsWith(`${base}/store/`), d.url);
    const got = await fetch(d.url);
    assert.equal(got.status, 200);
    assert.deepEqual(Buffer.from(await got.arrayBuffer()), bytes, "the mapped download reads the very bytes");
    assert.equal(mapped.length, 2, "the form's URL and the download's were mapped");
    assert.deepEqual(seen.map((r) => r.split(" ")[0]), ["POST", "GET"], `the upload and the download went through the mapped path: ${seen}`);
  } finally {
    await new Promise((r) => proxy.close(r));
  }
});

test("a document declared by name and type, from a plain Blob", async () => {
  const alice = as("alice");
  const text = "# Notes\n\nMilk, eggs.\n";
  const id = await uploadAttachment(alice, { sessionId: "att-b", file: new Blob([text]), filename: "notes.md", mediaType: "text/markdown" });
  let last;
  for await (const s of alice.submit({ sessionId: "att-b", input: "Read this", attachments: [id], scope: "turn" })) last = s;
  const part = last.payload.messages[0].parts?.find((p) => p.type === "file");
  assert.deepEqual(part, { type: "file", source: `attachment:${id}`, mimeType: "text/markdown", filename: "notes.md" });
  assert.ok(last.payload.messages[1].content.includes(`Attached: notes.md (text/markdown, ${Buffer.byteLength(text)} bytes)`));
});

test("refusals: a type (415), a size (413), an empty file (400) as HTTPErrors with their codes", async () => {
  const alice = as("alice");
  const svg = new File(["<svg/>"], "x.svg", { type: "image/svg+xml" });
  await assert.rejects(uploadAttachment(alice, { sessionId: "att-c", file: svg }), (e) => {
    assert.ok(e instanceof HTTPError);
    assert.equal(e.status, 415);
    assert.equal(e.code, "ATTACHMENT_TYPE_UNSUPPORTED");
    assert.ok(!e.message.includes("svg"), "the message repeats nothing of the request");
    return true;
  });
  const big = new File([new Uint8Array(3_932_161)], "big.png", { type: "image/png" });
  await assert.rejects(uploadAttachment(alice, { sessionId: "att-c", file: big }), (e) => e instanceof HTTPError && e.status === 413 && e.code === "ATTACHMENT_TOO_LARGE");
  const empty = new File([], "empty.txt", { type: "text/plain" });
  await assert.rejects(uploadAttachment(alice, { sessionId: "att-c", file: empty }), (e) => e instanceof HTTPError && e.status === 400 && e.code === "ATTACHMENT_INVALID");
});

test("another principal's attachment is not found; a download of none is 404", async () => {
  const id = await uploadAttachment(as("alice"), { sessionId: "att-d", file: new File([png()], "a.png") });
  await assert.rejects(attachmentDownload(as("bob"), "att-d", id), (e) => e instanceof HTTPError && e.status === 404 && e.code === "ATTACHMENT_NOT_FOUND");
  await assert.rejects(drain(as("bob").submit({ sessionId: "att-d", input: "mine?", attachments: [id] })), (e) => e instanceof HTTPError && e.code === "ATTACHMENT_NOT_FOUND");
});

test("an abort during the upload rejects with the signal's reason; one before the declaration sends nothing", async () => {
  const alice = as("alice");
  const ac = new AbortController();
  let storage = 0;
  // The declaration goes through; the abort comes as the form is posted.
  const realFetch = globalThis.fetch;
  globalThis.fetch = (url, init) => {
    if (String(url).startsWith(`${srv.base}/uploads/`)) {
      storage++;
      ac.abort(new Error("stopped by the test"));
    }
    return realFetch(url, init);
  };
  try {
    await assert.rejects(uploadAttachment(alice, { sessionId: "att-e", file: new File([png()], "a.png"), signal: ac.signal }), /stopped by the test/);
    assert.equal(storage, 1, "the form's post was started, and aborted");
    const early = AbortSignal.abort(new Error("before anything"));
    await assert.rejects(uploadAttachment(alice, { sessionId: "att-e", file: new File([png()], "a.png"), signal: early }), /before anything/);
    assert.equal(storage, 1);
  } finally {
    globalThis.fetch = realFetch;
  }
});

test("a storage refusal is an HTTPError with its status and nothing of its body", async () => {
  const alice = as("alice");
  const realFetch = globalThis.fetch;
  globalThis.fetch = async () => new Response("<Error><Code>AccessDenied</Code><Secret>s3cr3t</Secret></Error>", { status: 403 });
  try {
    await assert.rejects(uploadAttachment(alice, { sessionId: "att-f", file: new File([png()], "a.png") }), (e) => {
      assert.ok(e instanceof HTTPError);
      assert.equal(e.status, 403);
      assert.equal(e.code, "RESPONSE_INVALID");
      assert.equal(e.retryable, false);
      assert.ok(!e.message.includes("s3cr3t") && !e.message.includes("AccessDenied"));
      return true;
    });
  } finally {
    globalThis.fetch = realFetch;
  }
});

test("client-side checks: ids, filename, artifactsURL, attachments of a submit", async () => {
  const alice = as("alice");
  const file = new File([png()], "a.png");
  await assert.rejects(uploadAttachment(alice, { sessionId: "no/pe", file }), TypeError);
  await assert.rejects(uploadAttachment(alice, { sessionId: "s", file: new Blob(["x"]) }), TypeError);
  await assert.rejects(uploadAttachment(new TurnstreamClient({ turnURL: srv.turnURL }), { sessionId: "s", file }), TypeError);
  await assert.rejects(attachmentDownload(alice, "s", "../x"), TypeError);
  assert.throws(() => alice.submit({ sessionId: "s", input: "x", attachments: ["a", "a"] }), TypeError);
  assert.throws(() => alice.submit({ sessionId: "s", input: "x", attachments: ["-a"] }), TypeError);
  assert.throws(() => alice.submit({ sessionId: "s", input: "x", attachments: Array.from({ length: 26 }, (_, i) => `a${i}`) }), TypeError);
  // The payload carries the ids given, and no member for none.
  const bodies = [];
  const recording = as("alice", { fetch: async (url, init) => (bodies.push(JSON.parse(init.body)), new Response(null, { status: 503 })) });
  await assert.rejects(drain(recording.submit({ sessionId: "s", input: "x", attachments: [] })), HTTPError);
  await assert.rejects(drain(recording.submit({ sessionId: "s", input: "x", attachments: ["att_b", "att_a"] })), HTTPError);
  assert.deepEqual(bodies.map((b) => b.payload), [{ input: "x" }, { input: "x", attachments: ["att_b", "att_a"] }]);
  assert.equal(mediaTypeOf("Report.PDF"), "application/pdf");
  assert.equal(mediaTypeOf("notes.markdown"), "text/markdown");
  assert.equal(mediaTypeOf("x.svg"), undefined);
  assert.equal(mediaTypeOf("README"), undefined);
});

async function drain(turn) {
  const seen = [];
  for await (const s of turn) seen.push(s);
  return seen;
}
