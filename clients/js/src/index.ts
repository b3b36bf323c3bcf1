// turnstream's browser and Node client for AgentsKit Chat's turn protocol v1.
export { TurnstreamClient, Turn, newId } from "./client.js";
export type {
  ArtifactReference,
  Capabilities,
  ClientOptions,
  HeaderSource,
  Page,
  PageOptions,
  SessionSummary,
  ResumeOptions,
  SubmitOptions,
  TurnSummary,
} from "./client.js";
export { SnapshotCursor } from "./cursor.js";
export { CLIENT_CODES, HTTPError, StreamDiagnosticError, StreamIncompleteError, TurnstreamError } from "./errors.js";
export { LineSplitter } from "./ndjson.js";
export { MAX_PARSE_DEPTH, NOT_JSON, parseStrict } from "./json.js";
export type { JSONValue } from "./json.js";
export * from "./protocol.js";
