// Syntax highlighting for the chat page's code blocks: highlight.js's core
// with the languages people most often ask a model about. It is a separate
// script (syntax.js) that markdown.ts loads the first time an answer holds
// a code block that names a language, so that a chat without code costs
// nothing more.
//
// Why highlight.js: it is maintained, has no dependencies, tokenizes a
// partial block (an answer still streaming) without failing, escapes the
// code it returns (only <span class="hljs-..."> is added, and the page
// sanitizes the result like every other answer), and its core plus these
// languages weighs a fraction of the alternatives that ship grammars for
// every language (Shiki, Prism with its autoloader). Blocks in another
// language, or in none, stay plain: no guessing.

import hljs from "highlight.js/lib/core";
import bash from "highlight.js/lib/languages/bash";
import c from "highlight.js/lib/languages/c";
import cpp from "highlight.js/lib/languages/cpp";
import diff from "highlight.js/lib/languages/diff";
import go from "highlight.js/lib/languages/go";
import java from "highlight.js/lib/languages/java";
import javascript from "highlight.js/lib/languages/javascript";
import json from "highlight.js/lib/languages/json";
import python from "highlight.js/lib/languages/python";
import rust from "highlight.js/lib/languages/rust";
import shell from "highlight.js/lib/languages/shell";
import sql from "highlight.js/lib/languages/sql";
import typescript from "highlight.js/lib/languages/typescript";
import xml from "highlight.js/lib/languages/xml";
import yaml from "highlight.js/lib/languages/yaml";

const languages = { bash, c, cpp, diff, go, java, javascript, json, python, rust, shell, sql, typescript, xml, yaml };
for (const [name, grammar] of Object.entries(languages)) hljs.registerLanguage(name, grammar);

/**
 * highlight returns code as HTML with its tokens in <span class="hljs-...">
 * elements (the code's own text escaped), or undefined when language (a
 * name or alias: js, ts, py, sh, html, yml, golang...) is not one this
 * script knows.
 */
export function highlight(code: string, language: string): string | undefined {
  if (!hljs.getLanguage(language)) return undefined;
  return hljs.highlight(code, { language, ignoreIllegals: true }).value;
}
