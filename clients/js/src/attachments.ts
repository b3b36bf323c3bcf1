// Attachments (docs/attachments.md): a file uploaded in two phases, the
// declaration to the artifacts function and the bytes straight to the
// storage, then named in a submit's attachments; and a signed download of
// one. Free functions over a TurnstreamClient, as pkg/client's Upload and
// Attachment are, so that a page that does not attach files does not
// carry them.
import type { TurnstreamClient } from "./client.js";
import { HTTPError, TurnstreamError } from "./errors.js";
import { NOT_JSON, parseStrict, type JSONValue } from "./json.js";
import { isSafeId } from "./protocol.js";
import type { AttachmentDownload, UploadForm, UploadRequest } from "./wire.js";

/** UploadOptions name the file to attach and the session it goes to. */
export interface UploadOptions {
  /** The session the file is attached in (a SafeId); it need not have a turn yet. */
  sessionId: string;
  /** The bytes: a File, or any Blob with filename. */
  file: Blob;
  /**
   * The name the person sees, 1-255 bytes of UTF-8 without a path
   * separator or a control character; a File's name by default.
   */
  filename?: string;
  /**
   * The media type declared: by default the one of the filename's
   * extension (.png .jpg .jpeg .gif .webp .pdf .txt .md .csv .html .docx
   * .xlsx), else the Blob's type. The server accepts images png, jpeg,
   * gif and webp up to 3,932,160 bytes, documents pdf, plain text,
   * Markdown, CSV, HTML, Word and Excel up to 4,718,592 bytes.
   */
  mediaType?: string;
  /**
   * Called as the bytes go out with the file's bytes sent so far and its
   * size. In a browser (XMLHttpRequest) as the upload progresses; where
   * only fetch exists (Node), once, when the storage has the file.
   */
  onProgress?: (sent: number, total: number) => void;
  signal?: AbortSignal;
}

// The accepted media type of each file extension (attach.MediaTypeOf).
const EXTENSIONS: Record<string, string> = {
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  gif: "image/gif",
  webp: "image/webp",
  pdf: "application/pdf",
  txt: "text/plain",
  text: "text/plain",
  md: "text/markdown",
  markdown: "text/markdown",
  csv: "text/csv",
  html: "text/html",
  htm: "text/html",
  docx: "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
  xlsx: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
};

/**
 * mediaTypeOf returns the accepted media type a file named filename is
 * declared as, by its extension (case does not matter), or undefined for
 * any other extension. The server checks the bytes themselves.
 */
export function mediaTypeOf(filename: string): string | undefined {
  const i = filename.lastIndexOf(".");
  return i < 0 ? undefined : EXTENSIONS[filename.slice(i + 1).toLowerCase()];
}

/**
 * uploadAttachment attaches a file to a session in the two phases of
 * docs/attachments.md and returns the attachment's id, to send in
 * SubmitOptions.attachments within a day:
 *
 *  1. POST {artifactsURL}sessions/{sessionId}/uploads
 *     {"filename","mediaType","size"}, with the client's headers; the
 *     answer is 201 {"attachmentId","upload":{"url","method","fields"},
 *     "expiresAt"}.
 *  2. A multipart/form-data POST to upload.url (as ClientOptions.storageURL
 *     maps it) holding every field and
 *     then the file, named "file", without the client's headers (the
 *     form is signed); the storage answers 204.
 *
 * @throws HTTPError refusing the declaration, before any byte is sent:
 * ATTACHMENT_TYPE_UNSUPPORTED (415), ATTACHMENT_TOO_LARGE (413),
 * ATTACHMENT_INVALID (400: an empty file, a filename the server refuses);
 * HTTPError RESPONSE_INVALID with the storage's status when the storage
 * refuses the form (an expired one is 403; retryable for 408, 429, 5xx),
 * its body never read into the error; TurnstreamError NETWORK_FAILED
 * (retryable), RESPONSE_INVALID for an answer that is not a ticket; the
 * signal's reason when aborted; TypeError without an artifactsURL, a
 * SafeId session id or a filename.
 */
export async function uploadAttachment(client: TurnstreamClient, opts: UploadOptions): Promise<string> {
  const { sessionId, file, signal } = opts;
  if (client.artifactsURL === undefined) throw new TypeError("turnstream: no artifactsURL configured");
  if (!isSafeId(sessionId)) throw new TypeError("turnstream: session id is not a SafeId");
  const name = (file as Partial<File>).name;
  const filename = opts.filename ?? (typeof name === "string" ? name : "");
  if (filename === "") throw new TypeError("turnstream: a file to upload needs a filename");
  const mediaType = opts.mediaType ?? mediaTypeOf(filename) ?? file.type;
  const declared: UploadRequest = { filename, mediaType, size: file.size };
  const res = await client.request(`${client.artifactsURL}sessions/${sessionId}/uploads`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(declared),
    signal,
  });
  const ticket = await readJSON(res, signal);
  const form = isObj(ticket) ? uploadForm(ticket.upload) : undefined;
  if (!isObj(ticket) || !isSafeId(ticket.attachmentId) || !form) throw invalidResponse();
  const body = new FormData();
  for (const k of Object.keys(form.fields).sort()) body.append(k, form.fields[k]!);
  // The part's own type is the declared one, whatever the Blob says.
  body.append("file", file.type === mediaType ? file : new Blob([file], { type: mediaType }), filename);
  const progress = monotonic(file.size, opts.onProgress);
  const url = client.storageURL(form.url);
  const status = typeof XMLHttpRequest === "function" ? await postXHR(url, body, progress, signal) : await postFetch(url, body, signal);
  if (status < 200 || status > 299) throw new HTTPError(status, undefined);
  progress(1, 1);
  return ticket.attachmentId;
}

/**
 * attachmentDownload reads a signed download of one of the caller's
 * attachments, GET {artifactsURL}sessions/{sessionId}/attachments/{id}:
 * {attachmentId, url, expiresAt, mediaType, filename, size}, its url
 * reading the bytes for 5 minutes (give it to an <img>, or fetch it; as
 * ClientOptions.storageURL maps it). A
 * user message's part names the id in its source, "attachment:<id>".
 * @throws HTTPError ATTACHMENT_NOT_FOUND (404) for an id never uploaded,
 * deleted, another session's or another principal's; TurnstreamError
 * RESPONSE_INVALID for an answer of another shape; TypeError without an
 * artifactsURL or for ids that are not SafeIds.
 */
export async function attachmentDownload(
  client: TurnstreamClient,
  sessionId: string,
  attachmentId: string,
  signal?: AbortSignal,
): Promise<AttachmentDownload> {
  if (client.artifactsURL === undefined) throw new TypeError("turnstream: no artifactsURL configured");
  if (!isSafeId(sessionId) || !isSafeId(attachmentId)) throw new TypeError("turnstream: session and attachment ids must be SafeIds");
  const v = await client.getJSON(`${client.artifactsURL}sessions/${sessionId}/attachments/${attachmentId}`, signal);
  if (
    !isObj(v) ||
    v.attachmentId !== attachmentId ||
    !isWebURL(v.url) ||
    typeof v.expiresAt !== "string" ||
    typeof v.mediaType !== "string" ||
    typeof v.filename !== "string" ||
    typeof v.size !== "number"
  ) {
    throw invalidResponse();
  }
  return { ...(v as unknown as AttachmentDownload), url: client.storageURL(v.url) };
}

// monotonic wraps onProgress so that it sees the file's bytes, never
// going back and never twice the same: done/of is the share of the
// request's body sent (the form's fields come first, so the share is a
// little ahead of the file's own bytes, and reaches them at the end).
function monotonic(size: number, onProgress: UploadOptions["onProgress"]): (done: number, of: number) => void {
  let last = -1;
  return (done, of) => {
    const sent = of > 0 ? Math.min(size, Math.floor((size * done) / of)) : 0;
    if (sent <= last) return;
    last = sent;
    onProgress?.(sent, size);
  };
}

// postXHR posts body with XMLHttpRequest, whose upload events report the
// bytes sent (fetch has no upload progress), and resolves to the status.
function postXHR(url: string, body: FormData, progress: (done: number, of: number) => void, signal: AbortSignal | undefined): Promise<number> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const xhr = new XMLHttpRequest();
    const abort = (): void => xhr.abort();
    const settle = (): void => signal?.removeEventListener("abort", abort);
    xhr.open("POST", url);
    xhr.upload.onprogress = (e) => {
      if (e.lengthComputable) progress(e.loaded, e.total);
    };
    xhr.onload = () => {
      settle();
      resolve(xhr.status);
    };
    xhr.onerror = xhr.ontimeout = () => {
      settle();
      reject(networkFailed());
    };
    xhr.onabort = () => {
      settle();
      reject(signal?.aborted ? signal.reason : networkFailed());
    };
    signal?.addEventListener("abort", abort, { once: true });
    xhr.send(body);
  });
}

// postFetch posts body with fetch and resolves to the status, the answer's
// body read to its end and dropped.
async function postFetch(url: string, body: FormData, signal: AbortSignal | undefined): Promise<number> {
  try {
    const res = await fetch(url, { method: "POST", body, signal, cache: "no-store" });
    await res.arrayBuffer();
    return res.status;
  } catch {
    if (signal?.aborted) throw signal.reason;
    throw networkFailed();
  }
}

async function readJSON(res: Response, signal: AbortSignal | undefined): Promise<JSONValue | typeof NOT_JSON> {
  let text: string;
  try {
    text = await res.text();
  } catch {
    if (signal?.aborted) throw signal.reason;
    throw networkFailed();
  }
  return text.length > 65536 ? NOT_JSON : parseStrict(text);
}

function uploadForm(v: JSONValue | undefined): UploadForm | undefined {
  if (!isObj(v) || v.method !== "POST" || !isWebURL(v.url) || !isObj(v.fields)) return undefined;
  const fields = v.fields;
  if (!Object.values(fields).every((f) => typeof f === "string")) return undefined;
  return { url: v.url, method: "POST", fields: fields as Record<string, string> };
}

// isWebURL: an absolute http(s) URL, or a path of the page's origin.
function isWebURL(v: JSONValue | undefined): v is string {
  if (typeof v !== "string" || v === "") return false;
  if (v.startsWith("/") && !v.startsWith("//")) return true;
  return /^https?:\/\/[^/]/i.test(v);
}

function isObj(v: JSONValue | typeof NOT_JSON | undefined): v is { [key: string]: JSONValue } {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function invalidResponse(): TurnstreamError {
  return new TurnstreamError("RESPONSE_INVALID", "The server's answer is not the expected protocol.", false);
}

function networkFailed(): TurnstreamError {
  return new TurnstreamError("NETWORK_FAILED", "The server could not be reached.", true);
}
