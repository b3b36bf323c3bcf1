// Branches (docs/branches.md): a turn read by id whether or not it is on
// the active branch, the select that switches between the versions of an
// answer, and the fork that copies a conversation into a new session.
// Free functions over a TurnstreamClient, so that a page that does not
// call them does not carry them.
import type { TurnSummary, TurnstreamClient } from "./client.js";
import { TurnstreamError } from "./errors.js";
import { parseStrict } from "./json.js";
import { decodeMessages, isSafeId } from "./protocol.js";
import type { ForkRequest, SessionListItem, Siblings } from "./wire.js";

function invalid(): TurnstreamError {
  return new TurnstreamError("RESPONSE_INVALID", "The server's answer is not the expected protocol.", false);
}

function historyURL(client: TurnstreamClient, sessionId: string): string {
  if (client.historyURL === undefined) throw new TypeError("turnstream: no historyURL configured");
  if (!isSafeId(sessionId)) throw new TypeError("turnstream: session id is not a SafeId");
  return `${client.historyURL}sessions/${sessionId}`;
}

/** isSiblings reports whether v is a well-formed sibling group. */
export function isSiblings(v: unknown): v is Siblings {
  if (typeof v !== "object" || v === null || Array.isArray(v)) return false;
  const g = v as Record<string, unknown>;
  return (
    Array.isArray(g.turnIds) && g.turnIds.every(isSafeId) && g.count === g.turnIds.length &&
    typeof g.index === "number" && Number.isInteger(g.index) && g.index >= 0 && g.index < g.turnIds.length
  );
}

/**
 * readTurn reads one turn of a session by id (GET
 * {historyURL}sessions/{id}/turns/{turnId}), on the active branch or not
 * (superseded: true): how a page shows an answer's other versions.
 * @throws HTTPError TURN_NOT_FOUND (404) for a turn the session does not
 * have, SESSION_NOT_FOUND (404) for a session that is not the caller's.
 */
export async function readTurn(client: TurnstreamClient, sessionId: string, turnId: string, signal?: AbortSignal): Promise<TurnSummary> {
  if (!isSafeId(turnId)) throw new TypeError("turnstream: turn id is not a SafeId");
  const v = await client.getJSON(`${historyURL(client, sessionId)}/turns/${turnId}`, signal);
  if (typeof v !== "object" || v === null || Array.isArray(v) || v.turnId !== turnId) throw invalid();
  const messages = decodeMessages(v.messages ?? null);
  if (!messages || (v.siblings !== undefined && !isSiblings(v.siblings))) throw invalid();
  return { ...(v as unknown as TurnSummary), messages };
}

/**
 * selectTurn makes a version of an answer (a turn of its siblings) and
 * the turns that followed it the session's active branch (POST
 * {historyURL}sessions/{id}/turns/{turnId}/select): the next turn
 * continues from it and history shows it. Selecting the active version
 * does nothing.
 * @throws HTTPError TURN_NOT_SELECTABLE (409) for a turn that is no such
 * version, SESSION_BUSY (409, retryable) while a turn runs.
 */
export async function selectTurn(client: TurnstreamClient, sessionId: string, turnId: string, signal?: AbortSignal): Promise<void> {
  if (!isSafeId(turnId)) throw new TypeError("turnstream: turn id is not a SafeId");
  const res = await client.request(`${historyURL(client, sessionId)}/turns/${turnId}/select`, { method: "POST", signal });
  await res.text();
  if (res.status !== 204) throw invalid();
}

/**
 * forkSession creates a new session of the caller whose conversation is
 * the session's active branch up to and including fork.atTurnId (POST
 * {historyURL}sessions/{id}/fork), and returns it as listed. The source
 * is not changed; the same request again answers the same fork.
 * @throws HTTPError TURN_NOT_FOUND (404) for a turn that is not a
 * finished turn of the active branch, SESSION_CONFLICT (409) for a
 * fork.sessionId that names another session.
 */
export async function forkSession(client: TurnstreamClient, sessionId: string, fork: ForkRequest, signal?: AbortSignal): Promise<SessionListItem> {
  if (!isSafeId(fork.atTurnId) || (fork.sessionId !== undefined && !isSafeId(fork.sessionId))) {
    throw new TypeError("turnstream: a fork's turn or session id is not a SafeId");
  }
  const res = await client.request(`${historyURL(client, sessionId)}/fork`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(fork),
    signal,
  });
  const v = parseStrict(await res.text());
  if (res.status !== 201 || typeof v !== "object" || v === null || Array.isArray(v) || !isSafeId(v.sessionId)) throw invalid();
  if (fork.sessionId !== undefined && v.sessionId !== fork.sessionId) throw invalid();
  return v as unknown as SessionListItem;
}
