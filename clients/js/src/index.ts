// turnstream's browser and Node client for AgentsKit Chat's turn protocol v1.
export { TurnstreamClient, Turn, newId, pendingConfirmations, reasoning } from "./client.js";
export type {
  ArtifactReference,
  ClientOptions,
  DecideOptions,
  HeaderSource,
  Page,
  PageOptions,
  ResumeOptions,
  SubmitOptions,
  TurnSummary,
} from "./client.js";
export type { ConfirmationCode, MultitaskCode } from "./errors.js";
export { attachmentDownload, mediaTypeOf, uploadAttachment } from "./attachments.js";
export type { UploadOptions } from "./attachments.js";
export { exportSession, eraseSessions } from "./conversations.js";
export { forkSession, isSiblings, readTurn, selectTurn } from "./branches.js";
export type { SessionExport } from "./conversations.js";
export { SnapshotCursor } from "./cursor.js";
export type { AppendResult } from "./cursor.js";
export { decodeAppend, decodePartialAppend, EVENT_APPEND, isAppendLine } from "./compact.js";
export type { AppendLine } from "./compact.js";
export {
  CLIENT_CODES,
  CONFIRMATION_CODES,
  ConfirmationError,
  HTTPError,
  isConfirmationCode,
  isMultitaskCode,
  MULTITASK_CODES,
  MultitaskError,
  StreamDiagnosticError,
  StreamIncompleteError,
  TurnstreamError,
} from "./errors.js";
export { LineSplitter } from "./ndjson.js";
export { MAX_PARSE_DEPTH, NOT_JSON, parseStrict } from "./json.js";
export type { JSONValue } from "./json.js";
export * from "./protocol.js";
// The HTTP contract (headers, capability names, routes, bodies), generated from pkg/api.
export * from "./wire.js";
