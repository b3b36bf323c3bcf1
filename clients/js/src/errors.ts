import type { DecoderDiagnostic, DiagnosticEvent, TurnDiagnostic } from "./protocol.js";
import type { WireCode } from "./wire.js";

/**
 * Client-side codes, for failures that have no wire diagnostic. Each is a
 * TurnstreamError's code like the server's codes.
 *
 * - NETWORK_FAILED: the request did not reach the server or its answer
 *   broke off (retryable).
 * - STREAM_INCOMPLETE: a turn stream ended without its terminal line
 *   (retryable: the turn may still be running; resume or read history).
 * - RESPONSE_INVALID: the server answered something that is not the
 *   protocol (a non-NDJSON 200, an error status without an error body, a
 *   malformed JSON body). Retryable for 408, 429 and 5xx statuses.
 */
export const CLIENT_CODES = ["NETWORK_FAILED", "STREAM_INCOMPLETE", "RESPONSE_INVALID"] as const;

/**
 * TurnstreamError is every failure the client reports, abort excepted
 * (an aborted signal rejects with the signal's reason). The message is the
 * server's fixed message or the client's own; never response bytes.
 */
export class TurnstreamError extends Error {
  /** UPPER_SNAKE code: a wire code (SESSION_BUSY, ...) or one of CLIENT_CODES. */
  readonly code: string;
  /** Whether the same request may succeed later. */
  readonly retryable: boolean;
  constructor(code: string, message: string, retryable: boolean) {
    super(message);
    this.name = "TurnstreamError";
    this.code = code;
    this.retryable = retryable;
  }
}

/** HTTPError is an HTTP error answer; code and retryable come from its error body. */
export class HTTPError extends TurnstreamError {
  /** The HTTP status, e.g. 404. */
  readonly status: number;
  /** The error body's diagnostic; undefined when the body was not one. */
  readonly diagnostic: TurnDiagnostic | undefined;
  constructor(status: number, diagnostic: TurnDiagnostic | undefined) {
    const retryable = diagnostic ? diagnostic.retryable : status === 408 || status === 429 || status >= 500;
    super(
      diagnostic?.code ?? "RESPONSE_INVALID",
      diagnostic?.message ?? `The server answered HTTP ${status} without an error body.`,
      retryable,
    );
    this.name = "HTTPError";
    this.status = status;
    this.diagnostic = diagnostic;
  }
}

/** StreamDiagnosticError is a server.turn.diagnostic line, the last line of its stream. */
export class StreamDiagnosticError extends TurnstreamError {
  readonly event: DiagnosticEvent;
  constructor(event: DiagnosticEvent) {
    super(event.payload.code, event.payload.message, event.payload.retryable);
    this.name = "StreamDiagnosticError";
    this.event = event;
  }
}

/** StreamIncompleteError: the stream ended (or broke off) before its terminal line. */
export class StreamIncompleteError extends TurnstreamError {
  /** The last accepted sequence, the point a resume continues after. */
  readonly sequence: number | undefined;
  /** Lines that failed to decode, with the decoder's diagnostics. */
  readonly invalidLines: readonly DecoderDiagnostic[];
  constructor(sequence: number | undefined, invalidLines: readonly DecoderDiagnostic[]) {
    super("STREAM_INCOMPLETE", "The turn stream ended before the turn did.", true);
    this.name = "StreamIncompleteError";
    this.sequence = sequence;
    this.invalidLines = invalidLines;
  }
}

/**
 * The codes of a refused decision (client.decide): no such pending
 * confirmation in the session (404), decided already (409), or expired,
 * by CONFIRMATION_TTL or because a later turn superseded it (410). None is
 * retryable: deciding again with the same token fails the same way.
 */
export const CONFIRMATION_CODES = ["CONFIRMATION_NOT_FOUND", "CONFIRMATION_DECIDED", "CONFIRMATION_EXPIRED"] as const satisfies readonly WireCode[];

/** ConfirmationCode is one of CONFIRMATION_CODES. */
export type ConfirmationCode = (typeof CONFIRMATION_CODES)[number];

/** isConfirmationCode reports whether code is one of CONFIRMATION_CODES. */
export function isConfirmationCode(code: string): code is ConfirmationCode {
  return (CONFIRMATION_CODES as readonly string[]).includes(code);
}

/**
 * ConfirmationError is an HTTPError refusing a decision, before any
 * stream started and with nothing changed; retryable is always false.
 */
export class ConfirmationError extends HTTPError {
  declare readonly code: ConfirmationCode;
  declare readonly retryable: false;
  constructor(status: number, diagnostic: TurnDiagnostic & { code: ConfirmationCode }) {
    super(status, { ...diagnostic, retryable: false });
    this.name = "ConfirmationError";
  }
}

/**
 * The codes of a refused multitask policy (submit({multitask})): the
 * session's queue is full (SESSION_QUEUE_FULL, 409, retryable once a
 * queued turn has run; nothing was stored), or the session's definition or
 * the deployment does not serve the policy (MULTITASK_NOT_ALLOWED, 422).
 */
export const MULTITASK_CODES = ["SESSION_QUEUE_FULL", "MULTITASK_NOT_ALLOWED"] as const satisfies readonly WireCode[];

/** MultitaskCode is one of MULTITASK_CODES. */
export type MultitaskCode = (typeof MULTITASK_CODES)[number];

/** isMultitaskCode reports whether code is one of MULTITASK_CODES. */
export function isMultitaskCode(code: string): code is MultitaskCode {
  return (MULTITASK_CODES as readonly string[]).includes(code);
}

/**
 * MultitaskError is an HTTPError refusing a submit's multitask policy,
 * before anything was stored; retryable as the server says
 * (SESSION_QUEUE_FULL is, MULTITASK_NOT_ALLOWED is not).
 */
export class MultitaskError extends HTTPError {
  declare readonly code: MultitaskCode;
  constructor(status: number, diagnostic: TurnDiagnostic & { code: MultitaskCode }) {
    super(status, diagnostic);
    this.name = "MultitaskError";
  }
}
