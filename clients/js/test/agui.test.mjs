// The AG-UI endpoint (docs/agui.md) against the real AG-UI packages,
// pinned in the repository's package.json: every event of a corpus of
// turns (plain, tools, an approval round trip, stop, timeout, model
// failure, a lost turn, an unknown outcome, resumes from several points;
// written by pkg/turn's AG-UI tests) parses with @ag-ui/core's event
// schemas and passes @ag-ui/client's enforcement and verifier;
// @ag-ui/client's HttpAgent runs turns against the dev server and ends
// with the messages history holds; a reader that drops its connection
// mid-run and reconnects with Last-Event-ID ends with exactly the stored
// text; the walk-through's AG-UI snippet (docs/walkthrough.md) runs.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EventSchema } from "@ag-ui/core/schemas";
import { HttpAgent, enforceEvents, verifyEvents } from "@ag-ui/client";
import { from, lastValueFrom, toArray } from "rxjs";
import { repoRoot, startDevServer } from "./devserver.mjs";

const auth = { Authorization: "Bearer dev.alice" };
let srv;
before(async () => {
  srv = await startDevServer({ ECHO_DELAY: "30ms", ECHO_CHUNK_RUNES: "4", CHECKPOINT_INTERVAL: "150ms", LEASE_DURATION: "3s" });
});
after(async () => {
  await srv?.stop();
});

// frames parses an AG-UI SSE body into [{id, event}].
function frames(text) {
  const out = [];
  for (const block of text.split("\n\n")) {
    if (block === "") continue;
    const lines = block.split("\n");
    const id = lines.find((l) => l.startsWith("id: "))?.slice(4);
    const data = lines.find((l) => l.startsWith("data: "))?.slice(6);
    assert.ok(id !== undefined && data !== undefined, `frame ${JSON.stringify(block)}`);
    out.push({ id, event: JSON.parse(data) });
  }
  return out;
}

// conform runs events through @ag-ui/client's enforcement (which warns
// about, and strips, anything the protocol does not describe) and its
// verifier (the order of run, message and tool call events); it throws
// on any error or warning.
async function conform(events, name) {
  const warned = [];
  const warn = console.warn;
  console.warn = (...a) => warned.push(a.join(" "));
  try {
    await lastValueFrom(from(events).pipe(enforceEvents(), verifyEvents(), toArray()));
  } finally {
    console.warn = warn;
  }
  assert.deepEqual(warned, [], `${name}: @ag-ui/client warned`);
}

test("every event of the corpus parses with @ag-ui/core's schemas and passes @ag-ui/client's verifier", async () => {
  const dir = mkdtempSync(join(tmpdir(), "turnstream-agui-corpus-"));
  try {
    execFileSync(process.env.GO ?? "go", ["test", "-count=1", "-vet=off", "-run", "^TestAGUI", "./pkg/turn/"], {
      cwd: repoRoot,
      env: { ...process.env, TURNSTREAM_AGUI_CORPUS: dir },
      stdio: ["ignore", "ignore", "inherit"],
    });
    const files = readdirSync(dir).filter((f) => f.endsWith(".sse"));
    const kinds = new Set(files.map((f) => f.replace(/-.*|\.sse$/g, "")));
    for (const k of ["plain", "approval", "stop", "timeout", "model", "lost", "indeterminate", "resume", "reasoning"]) {
      assert.ok(kinds.has(k), `the corpus has a ${k} stream (${[...kinds]})`);
    }
    const types = new Set();
    for (const f of files) {
      const evs = frames(readFileSync(join(dir, f), "utf8")).map((fr) => fr.event);
      for (const ev of evs) {
        const r = EventSchema.safeParse(ev);
        assert.ok(r.success, `${f}: ${JSON.stringify(ev)}: ${r.error?.message}`);
        types.add(ev.type);
      }
      await conform(evs, f);
    }
    for (const t of ["RUN_STARTED", "RUN_FINISHED", "RUN_ERROR", "MESSAGES_SNAPSHOT", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT",
      "TEXT_MESSAGE_END", "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT",
      "REASONING_START", "REASONING_MESSAGE_START", "REASONING_MESSAGE_CONTENT", "REASONING_MESSAGE_END", "REASONING_END"]) {
      assert.ok(types.has(t), `the corpus has ${t}`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

// plainText is an assistant content's text (the ordered content envelope
// joins its text records; docs/protocol.md#ordered-assistant-content).
function plainText(content) {
  if (!content.startsWith("\x1e")) return content;
  return content
    .split("\n")
    .slice(1)
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l))
    .filter((r) => r.kind === "text")
    .map((r) => r.text)
    .join("");
}

// toAGUI maps history's canonical messages to AG-UI messages as
// docs/agui.md ("Messages") says: a second implementation of the mapping,
// to hold the server's to. History adds a turn's artifacts to its
// assistant message's metadata; live streams do not carry them.
function toAGUI(messages) {
  const out = [];
  for (const m of messages) {
    if (m.role !== "assistant") {
      out.push({ id: m.id, role: m.role, content: m.content });
      continue;
    }
    const meta = { ...(m.metadata ?? {}) };
    delete meta.artifacts;
    if (m.content.startsWith("\x1e")) meta.orderedContent = m.content;
    const decided = meta.confirmation?.toolCallId;
    const calls = (m.toolCalls ?? []).filter((c, i) => !(i === 0 && c.id === decided));
    const a = { id: m.id, role: "assistant", content: plainText(m.content) };
    if (calls.length) a.toolCalls = calls.map((c) => ({ id: c.id, type: "function", function: { name: c.name, arguments: JSON.stringify(c.args) } }));
    if (Object.keys(meta).length) a.metadata = meta;
    const results = [];
    for (const c of m.toolCalls ?? []) {
      if (c.status === "requires_confirmation") continue;
      if (c.status !== "complete" && c.status !== "error") break;
      const t = { id: `${m.id}.tool.${c.id}`, role: "tool", content: c.result ?? c.error ?? "", toolCallId: c.id };
      if (c.status === "error") t.error = c.error;
      results.push(t);
    }
    if (decided && results[0]?.toolCallId === decided) {
      const owner = out.findIndex((o) => o.role === "assistant" && o.toolCalls?.some((c) => c.id === decided));
      if (owner >= 0) {
        let at = owner + 1;
        while (at < out.length && out[at].role === "tool") at++;
        out.splice(at, 0, results.shift());
      }
    }
    // The reasoning is also a reasoning message of its own, right after the
    // answer (where the stream's REASONING_MESSAGE_START puts it).
    const thought = typeof meta.reasoning === "string" ? [{ id: `${m.id}.reasoning`, role: "reasoning", content: meta.reasoning }] : [];
    out.push(a, ...thought, ...results);
  }
  return out;
}

async function history(sessionId) {
  const res = await fetch(`${srv.historyURL}sessions/${sessionId}/messages?order=asc&limit=100`, { headers: auth });
  assert.equal(res.status, 200);
  return (await res.json()).messages;
}

test("HttpAgent runs turns, tools and an approval against the dev server and ends with history's messages", async () => {
  const agent = new HttpAgent({ url: `${srv.turnURL}agui`, headers: auth, threadId: "agui-http" });
  // Client-side history the server ignores: the stored session is the context.
  agent.addMessage({ id: "local-0", role: "user", content: "a message only this client has" });
  agent.addMessage({ id: "local-1", role: "user", content: "hello there" });
  await agent.runAgent({ runId: "run-1" });
  assert.deepEqual(agent.messages, toAGUI(await history("agui-http")));
  assert.equal(agent.messages.at(-1).content, "Echo: hello there");

  // Reasoning: its own message, streamed in a REASONING span, then the answer.
  agent.addMessage({ id: "local-r", role: "user", content: "/think weigh it up first" });
  await agent.runAgent({ runId: "run-r" });
  assert.deepEqual(agent.messages, toAGUI(await history("agui-http")));
  assert.deepEqual(agent.messages.at(-1), { id: "run-r.a.reasoning", role: "reasoning", content: "weigh it up first" });

  agent.addMessage({ id: "local-2", role: "user", content: "/note Groceries: milk, eggs" });
  await agent.runAgent({ runId: "run-2" });
  assert.deepEqual(agent.messages, toAGUI(await history("agui-http")));
  assert.ok(agent.messages.some((m) => m.role === "tool" && m.content.includes("notes/groceries.md")));

  agent.addMessage({ id: "local-3", role: "user", content: "/delete Groceries" });
  let finished;
  await agent.runAgent({ runId: "run-3" }, { onRunFinishedEvent: (p) => void (finished = p) });
  assert.equal(finished.outcome, "interrupt");
  assert.equal(agent.pendingInterrupts.length, 1);
  const [interrupt] = agent.pendingInterrupts;
  assert.equal(interrupt.reason, "tool_approval");
  assert.deepEqual(agent.messages, toAGUI(await history("agui-http")));

  await agent.runAgent({ runId: "run-4", resume: [{ interruptId: interrupt.id, status: "resolved", payload: { approved: true } }] });
  assert.deepEqual(agent.pendingInterrupts, []);
  const msgs = toAGUI(await history("agui-http"));
  assert.deepEqual(agent.messages, msgs);
  const answer = msgs.find((m) => m.role === "tool" && m.toolCallId === interrupt.toolCallId);
  assert.match(answer.content, /Deleted note/);
  assert.equal(msgs[msgs.indexOf(answer) - 1].toolCalls?.[0]?.id, interrupt.toolCallId, "the result answers the asking message");
});

test("a reader that drops the connection mid-run and reconnects with Last-Event-ID ends with the exact text", async () => {
  // About 2 s of echo at 4 characters every 30 ms: text events come at
  // least every 400 ms (docs/agui.md, "Pacing"), so the run is still
  // going after the first one however slow the machine.
  const input = "a long question, so that the slowed echo model takes a while to answer it. ".repeat(4).trim();
  const body = JSON.stringify({ threadId: "agui-drop", runId: "run-1", messages: [{ id: "m", role: "user", content: input }] });
  const texts = {}; // what the reader holds, by message id
  let lastId;
  let events = 0;
  const seen = [];
  // read consumes a response, applying its events, until stopAfter new
  // text deltas (then it drops the connection) or the run's end.
  async function read(res, stopAfter) {
    assert.equal(res.status, 200);
    const ctype = res.headers.get("content-type");
    assert.match(ctype, /^text\/event-stream/);
    const reader = res.body.getReader();
    const dec = new TextDecoder();
    let buf = "";
    let deltas = 0;
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return true;
      buf += dec.decode(value, { stream: true });
      let i;
      while ((i = buf.indexOf("\n\n")) >= 0) {
        const [fr] = frames(buf.slice(0, i + 2));
        buf = buf.slice(i + 2);
        const ev = fr.event;
        assert.ok(EventSchema.safeParse(ev).success, JSON.stringify(ev));
        seen.push(fr.id);
        lastId = fr.id;
        events++;
        if (ev.type === "MESSAGES_SNAPSHOT") {
          for (const k of Object.keys(texts)) delete texts[k];
          for (const m of ev.messages) texts[m.id] = m.content;
        } else if (ev.type === "TEXT_MESSAGE_CONTENT") {
          texts[ev.messageId] = (texts[ev.messageId] ?? "") + ev.delta;
          if (++deltas === stopAfter) {
            await reader.cancel();
            return false;
          }
        } else if (ev.type === "RUN_FINISHED" || ev.type === "RUN_ERROR") {
          await reader.cancel();
          return true;
        }
      }
    }
  }
  const url = `${srv.turnURL}agui`;
  let ended = await read(await fetch(url, { method: "POST", headers: { ...auth, "content-type": "application/json" }, body }), 1);
  assert.equal(ended, false, "dropped mid-run");
  for (let drops = 1; !ended; drops++) {
    const res = await fetch(`${url}/threads/agui-drop/runs/run-1`, { headers: { ...auth, "Last-Event-ID": lastId } });
    ended = await read(res, drops < 3 ? 1 : 0);
  }
  const stored = (await history("agui-drop")).at(-1);
  assert.equal(texts[stored.id], stored.content, "the reader holds exactly the stored answer");
  assert.equal(stored.content, `Echo: ${input}`);
  assert.ok(events > 4, "the run streamed");
});

test("the walk-through's AG-UI snippet runs against the dev server", () => {
  const page = readFileSync(join(repoRoot, "docs/walkthrough.md"), "utf8");
  const m = /<!-- agui-snippet -->\s*```js\n([\s\S]*?)```/.exec(page);
  assert.ok(m, "docs/walkthrough.md has the AG-UI snippet");
  const lines = m[1].trimEnd().split("\n");
  assert.ok(lines.length <= 12, `the snippet is short (${lines.length} lines)`);
  const dir = join(repoRoot, "clients/js/test-output");
  mkdirSync(dir, { recursive: true });
  const file = join(dir, "readme-agui.mjs");
  writeFileSync(file, m[1].replaceAll("http://127.0.0.1:8787", srv.base));
  const run = spawnSync(process.execPath, [file], { cwd: repoRoot, encoding: "utf8", timeout: 60_000 });
  assert.equal(run.status, 0, run.stderr);
  assert.match(run.stdout, /Echo: Hello from AG-UI/);
});
