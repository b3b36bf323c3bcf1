// The demo page's attachments (docs/attachments.md): files added to the
// composer by its button, by dropping them on it or by pasting images,
// each uploaded at once (uploadAttachment) and shown as a chip with its
// progress until the message goes; and the files of a sent message,
// images as thumbnails read through a signed download.

import {
  attachmentDownload,
  HTTPError,
  MAX_SUBMIT_ATTACHMENTS,
  mediaTypeOf,
  uploadAttachment,
  type AttachmentDownload,
  type Part,
  type TurnstreamClient,
} from "../src/index.js";

/** Sent is an uploaded file as a message sends it and shows it. */
export interface Sent {
  id: string;
  mediaType: string;
  filename: string;
}

interface Chip {
  file: File;
  el: HTMLElement;
  progress: HTMLProgressElement;
  abort: AbortController;
  /** The upload: the file as sent, or undefined when it failed or was removed. */
  done: Promise<Sent | undefined>;
  failed?: boolean;
}

/** Composer is what the page asks of the composer's files. */
export interface Composer {
  /** How many files the composer holds (uploading or uploaded). */
  count(): number;
  /**
   * ready waits for the uploads in flight, those of files added meanwhile
   * too, and returns the files to send; undefined when one of them failed
   * meanwhile (its refusal is shown, the others stay).
   */
  ready(): Promise<Sent[] | undefined>;
  /** clear empties the composer once its files went with a message. */
  clear(): void;
}

interface Deps {
  client: TurnstreamClient;
  sessionId: string;
  /** The drop target: the composer form. */
  form: HTMLElement;
  /** Where pasted images are taken: the message box. */
  input: HTMLTextAreaElement;
  /** The attach button, the hidden file input, the chips' list, the refusal's alert. */
  button: HTMLButtonElement;
  picker: HTMLInputElement;
  list: HTMLElement;
  alert: HTMLElement;
  announce(s: string): void;
  /** The page's plain words for a failure that is not a refusal of the file. */
  plain(e: unknown): string;
}

const IMAGE = /^image\/(png|jpeg|gif|webp)$/;

// Why the server refused a file, in plain words (its codes in
// docs/attachments.md).
const REFUSED: Record<string, string> = {
  ATTACHMENT_TYPE_UNSUPPORTED: "only images (PNG, JPEG, GIF, WebP) and PDF, text, Markdown, CSV, HTML, Word or Excel documents can be attached.",
  ATTACHMENT_TOO_LARGE: "it is too large (images up to 3.75 MiB, documents up to 4.5 MiB).",
  ATTACHMENT_INVALID: "it is empty, or its name can't be used.",
};

/** size says n bytes in the units a person reads. */
export function size(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(n < 10240 ? 1 : 0)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

/**
 * composer wires the composer's files: the button opens the file input,
 * files dropped on the form or images pasted into the message box are
 * added, and each is uploaded at once.
 */
export function composer(d: Deps): Composer {
  const chips: Chip[] = [];

  const add = (files: Iterable<File>): void => {
    d.alert.hidden = true;
    for (const file of files) {
      if (chips.length >= MAX_SUBMIT_ATTACHMENTS) {
        refuse(`${file.name} wasn't attached: at most ${MAX_SUBMIT_ATTACHMENTS} files go with one message.`);
        break;
      }
      chips.push(upload(file));
    }
    d.list.hidden = chips.length === 0;
  };

  const refuse = (s: string): void => {
    d.alert.textContent = s;
    d.alert.hidden = false;
  };

  const remove = (c: Chip, focus: boolean): void => {
    const i = chips.indexOf(c);
    if (i < 0) return;
    chips.splice(i, 1);
    c.abort.abort();
    c.el.remove();
    d.list.hidden = chips.length === 0;
    if (focus) (chips[Math.min(i, chips.length - 1)]?.el.querySelector("button") ?? d.input).focus();
  };

  const upload = (file: File): Chip => {
    const el = document.createElement("li");
    el.className = "chip";
    el.dataset.state = "uploading";
    el.dataset.name = file.name;
    if (IMAGE.test(file.type)) {
      const img = document.createElement("img");
      img.alt = ""; // the chip's text names the file
      el.append(img);
      // A data: URL (the page's policy allows img-src data:, not blob:).
      const r = new FileReader();
      r.onload = () => (img.src = String(r.result));
      r.readAsDataURL(file);
    } else {
      el.append(span("", "doc"));
    }
    el.append(span(file.name, "name"), span(size(file.size), "size"));
    const progress = document.createElement("progress");
    progress.max = Math.max(file.size, 1);
    progress.value = 0;
    progress.setAttribute("aria-label", `Uploading ${file.name}`);
    const rm = document.createElement("button");
    rm.type = "button";
    rm.className = "ghost icon";
    rm.textContent = "×";
    rm.setAttribute("aria-label", `Remove ${file.name}`);
    el.append(progress, rm);
    d.list.append(el);
    const c: Chip = { file, el, progress, abort: new AbortController(), done: Promise.resolve(undefined) };
    rm.addEventListener("click", () => remove(c, true));
    c.done = uploadAttachment(d.client, {
      sessionId: d.sessionId,
      file,
      signal: c.abort.signal,
      onProgress: (sent) => (progress.value = sent),
    }).then(
      (id) => {
        el.dataset.state = "ready";
        progress.remove();
        d.announce(`${file.name} attached.`);
        return { id, filename: file.name, mediaType: mediaTypeOf(file.name) ?? file.type };
      },
      (e: unknown) => {
        if (c.abort.signal.aborted) return undefined; // removed
        c.failed = true;
        const why = e instanceof HTTPError ? REFUSED[e.code] : undefined;
        refuse(`${file.name} wasn't attached: ${why ?? d.plain(e)}`);
        remove(c, document.activeElement === rm);
        return undefined;
      },
    );
    return c;
  };

  d.button.addEventListener("click", () => d.picker.click());
  d.picker.addEventListener("change", () => {
    add(d.picker.files ?? []);
    d.picker.value = "";
  });
  const files = (e: DragEvent): boolean => e.dataTransfer?.types.includes("Files") === true;
  d.form.addEventListener("dragover", (e) => {
    if (!files(e)) return;
    e.preventDefault();
    d.form.dataset.drop = "true";
  });
  d.form.addEventListener("dragleave", (e) => {
    if (!d.form.contains(e.relatedTarget as Node | null)) delete d.form.dataset.drop;
  });
  d.form.addEventListener("drop", (e) => {
    delete d.form.dataset.drop;
    if (!files(e)) return;
    e.preventDefault();
    add(e.dataTransfer!.files);
  });
  d.input.addEventListener("paste", (e) => {
    const images = [...(e.clipboardData?.files ?? [])].filter((f) => f.type.startsWith("image/"));
    if (images.length === 0) return; // text pastes as text
    e.preventDefault();
    add(images);
  });

  return {
    count: () => chips.length,
    async ready() {
      for (;;) {
        const mine = [...chips];
        const sent = await Promise.all(mine.map((c) => c.done));
        if (mine.some((c) => c.failed)) return undefined;
        // Done when no file came meanwhile (one removed meanwhile just stays out).
        if (chips.every((c) => mine.includes(c))) return chips.map((c) => sent[mine.indexOf(c)]!);
      }
    },
    clear() {
      for (const c of [...chips]) remove(c, false);
      d.alert.hidden = true;
    },
  };
}

function span(s: string, cls: string): HTMLElement {
  const el = document.createElement("span");
  el.textContent = s;
  el.className = cls;
  return el;
}

/** ATTACHMENT is the source prefix of a part that names an upload. */
const ATTACHMENT = "attachment:";

/** partsOf returns the uploaded files a message's parts name, in order. */
export function partsOf(parts: readonly Part[] | undefined): Part[] {
  return (parts ?? []).filter((p) => (p.type === "image" || p.type === "file") && p.source.startsWith(ATTACHMENT));
}

/** idsOf returns the attachment ids a message's parts name (what an edit or a retry sends again). */
export function idsOf(parts: readonly Part[] | undefined): string[] {
  return partsOf(parts).map((p) => (p as { source: string }).source.slice(ATTACHMENT.length));
}

/** asParts returns the parts a user message will hold for files sent with it. */
export function asParts(sent: readonly Sent[]): Part[] {
  return sent.map((s) =>
    IMAGE.test(s.mediaType)
      ? { type: "image", source: ATTACHMENT + s.id, mimeType: s.mediaType }
      : { type: "file", source: ATTACHMENT + s.id, mimeType: s.mediaType, filename: s.filename },
  );
}

// One signed download per attachment and page: a thumbnail shown again
// keeps its element (and the browser its bytes) past the URL's 5 minutes.
const downloads = new Map<string, Promise<AttachmentDownload>>();

/**
 * renderFiles fills el with a sent message's files, unless it shows them
 * already: images as thumbnails read through their signed download
 * (alt: the filename, "Attached image" until it is known), documents as
 * chips with their name. A file that can no longer be read says so.
 */
export function renderFiles(el: HTMLElement, parts: readonly Part[], client: TurnstreamClient, sessionId: string): void {
  const files = partsOf(parts);
  const key = files.map((p) => (p as { source: string }).source).join(" ");
  if (el.dataset.key === key) return;
  el.dataset.key = key;
  el.replaceChildren();
  el.hidden = files.length === 0;
  for (const p of files) {
    const id = (p as { source: string }).source.slice(ATTACHMENT.length);
    let d = downloads.get(id);
    if (!d) {
      d = attachmentDownload(client, sessionId, id);
      d.catch(() => downloads.delete(id));
      downloads.set(id, d);
    }
    if (p.type === "image") {
      const img = document.createElement("img");
      img.className = "thumb";
      img.alt = "Attached image";
      el.append(img);
      d.then(
        (x) => {
          img.alt = x.filename || "Attached image";
          img.src = x.url;
        },
        () => img.replaceWith(span("Image no longer available", "file gone")),
      );
    } else {
      const name = p.type === "file" && p.filename ? p.filename : "Attached file";
      const chip = span("", "file");
      chip.append(span("", "doc"), span(name, "name"));
      el.append(chip);
      d.then(
        (x) => chip.append(span(size(x.size), "size")),
        () => chip.append(span("no longer available", "size")),
      );
    }
  }
}
