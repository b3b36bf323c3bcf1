// A person's data beyond the list (docs/conversations.md): a session's
// export, and the erasure of a principal's sessions. Free functions over a
// TurnstreamClient, so that a page that does not call them does not carry
// them.
import type { TurnstreamClient } from "./client.js";
import { TurnstreamError } from "./errors.js";
import { NOT_JSON, parseStrict, type JSONValue } from "./json.js";
import { isSafeId } from "./protocol.js";
import type { DeleteProgress } from "./wire.js";

/** SessionExport is the document of GET {historyURL}sessions/{id}/export. */
export interface SessionExport {
  format: "turnstream.export";
  version: 1;
  sessionId: string;
  exportedAt: string;
  /** The agentskit.chat.session v1 envelope. */
  session: JSONValue;
  /** Every turn as GET .../turns shows it, oldest first. */
  turns: JSONValue[];
  complete: true;
}

/** ERASE_MAX_CALLS bounds the requests of one eraseSessions call. */
const ERASE_MAX_CALLS = 1000;

/**
 * exportSession reads the whole conversation of one of the caller's
 * sessions as one JSON document (GET {historyURL}sessions/{id}/export).
 * Pass a client whose historyURL is the turn function's URL to read a long
 * conversation streamed (the history function's URL answers at most 6 MB
 * on Lambda).
 * @throws HTTPError SESSION_NOT_FOUND (404) for a session that is not the
 * caller's; TurnstreamError RESPONSE_INVALID (retryable) when the server
 * had to cut the document short ("complete": false).
 */
export async function exportSession(client: TurnstreamClient, sessionId: string, signal?: AbortSignal): Promise<SessionExport> {
  if (client.historyURL === undefined) throw new TypeError("turnstream: no historyURL configured");
  if (!isSafeId(sessionId)) throw new TypeError("turnstream: session id is not a SafeId");
  const v = await client.getJSON(`${client.historyURL}sessions/${sessionId}/export`, signal);
  if (typeof v !== "object" || v === null || Array.isArray(v) || v.sessionId !== sessionId || !Array.isArray(v.turns)) {
    throw new TurnstreamError("RESPONSE_INVALID", "The server's answer is not the expected protocol.", false);
  }
  if (v.complete !== true) {
    throw new TurnstreamError("RESPONSE_INVALID", "The export was cut short; ask again.", true);
  }
  return v as unknown as SessionExport;
}

/**
 * eraseSessions deletes every session of the principal subject of the
 * caller's tenant (DELETE {historyURL}principals/{subject}/sessions), for
 * the tenant's trusted principal only. It asks again while the server
 * answers "deleting" and deleted some, and returns the total: status
 * "deleted" when nothing is left, or "deleting" when the sessions left
 * are busy (their turns running): call it again once they ended.
 * @throws HTTPError REQUEST_FORBIDDEN (403) for anyone but the trusted
 * principal.
 */
export async function eraseSessions(client: TurnstreamClient, subject: string, signal?: AbortSignal): Promise<DeleteProgress> {
  if (client.historyURL === undefined) throw new TypeError("turnstream: no historyURL configured");
  if (subject === "") throw new TypeError("turnstream: empty subject");
  const url = `${client.historyURL}principals/${encodeURIComponent(subject)}/sessions`;
  const total: DeleteProgress = { status: "deleting", deleted: 0, busy: 0 };
  for (let calls = 0; calls < ERASE_MAX_CALLS; calls++) {
    const res = await client.request(url, { method: "DELETE", signal });
    const text = await res.text();
    const v = text.length > 4096 ? NOT_JSON : parseStrict(text);
    if (
      typeof v !== "object" || v === null || Array.isArray(v) || (v.status !== "deleting" && v.status !== "deleted") ||
      typeof v.deleted !== "number" || typeof v.busy !== "number"
    ) {
      throw new TurnstreamError("RESPONSE_INVALID", "The server's answer is not the expected protocol.", false);
    }
    total.deleted += v.deleted;
    total.busy = v.busy;
    total.status = v.status;
    if (v.status === "deleted" || (v.deleted === 0 && v.busy > 0)) break;
  }
  return total;
}
