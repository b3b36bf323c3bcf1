// Records turn streams from the dev server into testdata/streams/*.ndjson,
// byte for byte, for the decoder and split tests. Run from clients/js:
//   node scripts/record-streams.mjs
// then regenerate the Go decoder's results:
//   go test ./internal/demo -run TestClientFixtures -update
import { writeFileSync } from "node:fs";
import { startDevServer } from "../test/devserver.mjs";

const srv = await startDevServer({ ECHO_DELAY: "40ms", ECHO_CHUNK_RUNES: "3", SNAPSHOT_INTERVAL: "1ms", LEASE_DURATION: "3s" });
const submit = (sessionId, turnId, input, headers = {}) =>
  fetch(srv.turnURL, {
    method: "POST",
    headers: { "Content-Type": "application/json", ...headers },
    body: JSON.stringify({
      protocol: "agentskit.chat.turn", version: 1, eventId: `${turnId}.e`, sessionId, turnId, sequence: 0,
      emittedAt: new Date().toISOString(), event: "client.turn.submit", payload: { input },
    }),
  });
const save = async (name, res) => writeFileSync(`testdata/streams/${name}.ndjson`, Buffer.from(await res.arrayBuffer()));
try {
  await save("plain", await submit("rec-a", "rec-a-1", "hello there"));
  await save("second-turn", await submit("rec-a", "rec-a-2", "and again"));
  await save("unicode", await submit("rec-b", "rec-b-1", "héllo — 日本語 ✓ 𝄞😀 ok", { "X-Turnstream-Snapshot-Scope": "turn" }));
  await save("note", await submit("rec-c", "rec-c-1", "/note Groceries: milk, eggs"));
  const res = await submit("rec-d", "rec-d-1", "a long answer that will be stopped before it gets to the end of itself", { "X-Turnstream-Snapshot-Scope": "turn" });
  const body = res.arrayBuffer();
  await new Promise((r) => setTimeout(r, 300));
  await fetch(`${srv.turnURL}stop`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ sessionId: "rec-d", turnId: "rec-d-1" }) });
  writeFileSync("testdata/streams/stopped.ndjson", Buffer.from(await body));
} finally {
  await srv.stop();
}
