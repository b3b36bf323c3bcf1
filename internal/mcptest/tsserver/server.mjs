// An MCP server built with the official TypeScript SDK
// (@modelcontextprotocol/sdk, pinned in package.json), for the Go tests
// that check turnstream's client against an SDK other than its own
// (mcptest.StartTypeScript). Stateless Streamable HTTP with JSON
// responses: a fresh McpServer per request. It prints its endpoint on
// stdout, then serves until stdin closes.
//
// Tools: add {a, b} answers their sum; remove {title} answers
// "Removed <title>.". GET /calls answers how many times each tool ran, as
// JSON.
import http from "node:http";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { z } from "zod";

const calls = {};
const counted = (name, f) => async (args) => {
  calls[name] = (calls[name] ?? 0) + 1;
  return f(args);
};

function newServer() {
  const server = new McpServer({ name: "turnstream-ts-test", version: "1.0.0" });
  server.registerTool(
    "add",
    { description: "Adds two numbers.", inputSchema: { a: z.number(), b: z.number() } },
    counted("add", async ({ a, b }) => ({ content: [{ type: "text", text: String(a + b) }] })),
  );
  server.registerTool(
    "remove",
    { description: "Removes a note by its title.", inputSchema: { title: z.string() } },
    counted("remove", async ({ title }) => ({ content: [{ type: "text", text: `Removed ${title}.` }] })),
  );
  return server;
}

async function readBody(req) {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  const text = Buffer.concat(chunks).toString("utf8");
  return text ? JSON.parse(text) : undefined;
}

const httpServer = http.createServer(async (req, res) => {
  try {
    if (req.method === "GET" && req.url === "/calls") {
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(calls));
      return;
    }
    if (req.url !== "/mcp") {
      res.writeHead(404).end();
      return;
    }
    if (req.method !== "POST") {
      res.writeHead(405, { allow: "POST" }).end(); // stateless: no stream to open, no session to end
      return;
    }
    const body = await readBody(req);
    const server = newServer();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on("close", () => {
      transport.close();
      server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
  } catch (e) {
    if (!res.headersSent) res.writeHead(500).end(String(e));
  }
});

httpServer.listen(0, "127.0.0.1", () => {
  console.log(`http://127.0.0.1:${httpServer.address().port}/mcp`);
});
process.stdin.resume();
process.stdin.on("end", () => process.exit(0));
