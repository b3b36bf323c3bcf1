// Markdown for the demo page: CommonMark with GFM tables and fenced code
// (marked), then an HTML sanitizer (DOMPurify) over marked's output.
//
// Why these two: marked is small (about 15 KB gzipped), fast enough to
// re-render a growing answer on every frame, maintained, and follows
// CommonMark and GFM; it does not sanitize, by its own documentation, so
// DOMPurify (Cure53's sanitizer, the one browsers' own security teams
// point to) cleans whatever marked emits. Two layers, each enough alone
// for what it covers:
//   - raw HTML in the text (a <script>, an <img onerror>) is never passed
//     through: the html renderer below writes it escaped, as text;
//   - DOMPurify then removes anything executable that markdown itself can
//     produce (a javascript: link, an event attribute) and every element
//     or attribute outside its allow-list.
// Links open in a new tab with rel="noopener noreferrer"; images are
// shown as links (the page's Content-Security-Policy would block them,
// and a remote image is a tracking pixel). Code blocks get their language
// and a Copy button (data-action="copy"; the page handles the click).
// A block that names a language is highlighted (syntax.ts, loaded the first
// time one appears; onHighlighter tells the page to render again then)
// before the sanitizer runs, so that highlighted code is sanitized too.

import { Marked, type Tokens } from "marked";
import DOMPurify from "dompurify";

const escapes: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
const escape = (s: string): string => s.replace(/[&<>"']/g, (c) => escapes[c]!);

const md = new Marked({
  gfm: true,
  breaks: true, // a chat's single line breaks are meant, as in the peers
  renderer: {
    html({ text }: Tokens.HTML | Tokens.Tag): string {
      return escape(text);
    },
    image({ href, text }: Tokens.Image): string {
      return `<a href="${escape(href)}">${escape(text || "image")}</a>`;
    },
    code({ text, lang }: Tokens.Code): string {
      const language = (lang ?? "").trim().split(/\s+/)[0]!.replace(/[^\w+#.-]/g, "").slice(0, 32);
      const label = language || "text";
      const cls = language ? ` class="language-${escape(language)}"` : "";
      const html = language ? highlighted(text, language) : undefined;
      return (
        `<div class="code"><div class="code-head"><span class="lang">${escape(label)}</span>` +
        `<button type="button" class="copy" data-action="copy" aria-label="Copy ${escape(label)} code">Copy</button></div>` +
        `<pre><code${cls}>${html ?? escape(text)}</code></pre></div>`
      );
    },
  },
});

// The highlighter (syntax.js), once loaded; loading, whether it was asked
// for; ready, what to call when it arrives.
let highlighter: { highlight(code: string, language: string): string | undefined } | undefined;
let loading = false;
const ready: (() => void)[] = [];

// Languages that mean "no language": nothing to load for them.
const plainLanguages = new Set(["text", "txt", "plain", "plaintext", "output", "console", "log"]);

// highlighted returns code in language as highlighted HTML, or undefined:
// the language is unknown, or the highlighter is not loaded yet (it is
// asked for, and onHighlighter's callbacks run when it arrives).
function highlighted(code: string, language: string): string | undefined {
  const lang = language.toLowerCase();
  if (plainLanguages.has(lang)) return undefined;
  if (highlighter) return highlighter.highlight(code, lang);
  if (!loading) {
    loading = true;
    import("./syntax.js").then(
      (m) => {
        highlighter = m;
        for (const f of ready.splice(0)) f();
      },
      () => undefined, // code stays plain; the page works as before
    );
  }
  return undefined;
}

/**
 * onHighlighter calls f once the syntax highlighter has loaded (a code
 * block named a language): what was rendered before it came is plain and
 * can be rendered again.
 */
export function onHighlighter(f: () => void): void {
  ready.push(f);
}

let hooked = false;

function hook(): void {
  if (hooked) return;
  hooked = true;
  DOMPurify.addHook("afterSanitizeAttributes", (node) => {
    if (node.tagName === "A" && node.hasAttribute("href")) {
      node.setAttribute("target", "_blank");
      node.setAttribute("rel", "noopener noreferrer");
    }
  });
}

/**
 * render returns text as sanitized HTML nodes: the top-level blocks of its
 * markdown (paragraphs, lists, tables wrapped for scrolling, code blocks),
 * whitespace between them dropped.
 */
export function render(text: string): Node[] {
  hook();
  const html = md.parse(text, { async: false }) as string;
  const frag = DOMPurify.sanitize(html, {
    RETURN_DOM_FRAGMENT: true,
    ADD_ATTR: ["target"],
    FORBID_TAGS: ["style", "form", "input", "textarea", "select", "img", "svg", "math", "iframe"],
    FORBID_ATTR: ["style"],
  });
  const out: Node[] = [];
  for (const n of Array.from(frag.childNodes)) {
    if (n.nodeType === Node.TEXT_NODE && (n.textContent ?? "").trim() === "") continue;
    if (n instanceof HTMLTableElement) {
      const wrap = document.createElement("div");
      wrap.className = "table-wrap";
      wrap.append(n);
      out.push(wrap);
      continue;
    }
    out.push(n);
  }
  return out;
}

/**
 * morph makes el's children equal to nodes, keeping every child that is
 * already equal (same position, isEqualNode): while an answer streams,
 * only the block being written changes, so nothing above it flickers, a
 * selection in it survives and a Copy button keeps its focus.
 */
export function morph(el: HTMLElement, nodes: readonly Node[]): void {
  const old = Array.from(el.childNodes);
  nodes.forEach((n, i) => {
    const o = old[i];
    if (o === undefined) el.append(n);
    else if (!o.isEqualNode(n)) o.replaceWith(n);
  });
  for (const o of old.slice(nodes.length)) o.remove();
}

/** plain returns rendered markdown's text, for an announcement. */
export function plain(text: string, max = 400): string {
  const div = document.createElement("div");
  div.append(...render(text));
  for (const b of div.querySelectorAll(".code-head")) b.remove();
  const t = (div.textContent ?? "").replace(/\s+/g, " ").trim();
  return t.length > max ? t.slice(0, max - 1) + "…" : t;
}
