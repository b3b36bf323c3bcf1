// What rendering a streamed answer as Markdown costs the chat page, in
// headless Chromium (make js-bench): a 16 KB answer of paragraphs, lists,
// code blocks and a table, grown 60 characters at a time (a stream's
// updates), rendered at every step three ways, interleaved round by round:
//
//   morph   the page's way: marked + DOMPurify, then only the changed
//           top-level blocks replaced (demo/markdown.ts morph)
//   replace the same Markdown, every block replaced at every step
//   text    no Markdown: the text set as is (the page before, the baseline)
//
// Each step forces layout (offsetHeight), so the figure is what the page
// pays per update. It prints one Markdown table: the median time per step
// and per answer over the rounds, the ratio to text, and how many nodes
// each way replaces per step (morph touches the block being written).
// Not part of make test: the figures depend on the machine; the ratios
// are what to read.
import { build } from "esbuild";
import { chromium } from "playwright-core";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { CHROMIUM } from "../test/browser/chromium.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const ROUNDS = Number(process.env.ROUNDS ?? 7);
const STEP = 60;

function answer() {
  const parts = [];
  for (let i = 1; parts.join("\n\n").length < 16 * 1024; i++) {
    parts.push(`## Part ${i}`);
    parts.push(`This paragraph explains **part ${i}** with some \`inline code\`, a [link](https://example.com/${i}) and enough words to wrap over a couple of lines in a chat bubble.`);
    parts.push(`- first point of ${i}\n- second point, *emphasised*\n- third point`);
    parts.push("```go\nfunc part" + i + "() error {\n\treturn fmt.Errorf(\"part %d\", " + i + ")\n}\n```");
    if (i % 3 === 0) parts.push(`| key | value |\n|---|---|\n| part | ${i} |\n| size | ${i * 60} |`);
  }
  return parts.join("\n\n");
}

const bundle = await build({
  entryPoints: [join(here, "../demo/markdown.ts")],
  bundle: true,
  format: "iife",
  globalName: "md",
  minify: true,
  write: false,
  platform: "browser",
  logLevel: "warning",
});
const profile = mkdtempSync(join(tmpdir(), "turnstream-bench-"));
const ctx = await chromium.launchPersistentContext(profile, {
  executablePath: CHROMIUM,
  headless: true,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  viewport: { width: 1280, height: 860 },
});
try {
  const page = await ctx.newPage();
  await page.setContent('<div id="host" style="width:620px;font:16px/1.5 sans-serif"></div>');
  await page.addScriptTag({ content: bundle.outputFiles[0].text });
  const text = answer();
  const result = await page.evaluate(
    ({ text, STEP, ROUNDS }) => {
      const host = document.getElementById("host");
      const ways = {
        morph: (el, t) => window.md.morph(el, window.md.render(t)),
        replace: (el, t) => el.replaceChildren(...window.md.render(t)),
        text: (el, t) => (el.textContent = t),
      };
      const steps = [];
      for (let n = STEP; n < text.length; n += STEP) steps.push(text.slice(0, n));
      steps.push(text);
      const out = {};
      for (const name of Object.keys(ways)) out[name] = { perStep: [], perAnswer: [], replaced: [] };
      for (let r = 0; r < ROUNDS; r++) {
        for (const [name, way] of Object.entries(ways)) {
          const el = document.createElement("div");
          host.replaceChildren(el);
          let replaced = 0;
          const mo = new MutationObserver((rs) => {
            for (const rec of rs) replaced += rec.addedNodes.length;
          });
          mo.observe(el, { childList: true });
          const times = [];
          for (const t of steps) {
            const t0 = performance.now();
            way(el, t);
            void el.offsetHeight;
            times.push(performance.now() - t0);
          }
          mo.takeRecords().forEach((rec) => (replaced += rec.addedNodes.length));
          mo.disconnect();
          times.sort((a, b) => a - b);
          out[name].perStep.push(times[times.length >> 1]);
          out[name].perAnswer.push(times.reduce((a, b) => a + b, 0));
          out[name].replaced.push(replaced / steps.length);
        }
      }
      return { out, steps: steps.length, bytes: new TextEncoder().encode(text).length };
    },
    { text, STEP, ROUNDS },
  );
  const med = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
  const base = result.out.text;
  console.log(`Markdown rendering of a ${result.bytes}-byte answer grown ${STEP} characters at a time (${result.steps} updates), median of ${ROUNDS} interleaved rounds, Chromium ${ctx.browser()?.version() ?? ""}\n`);
  console.log("| way | per update (median) | whole answer | vs text | top-level nodes replaced per update |");
  console.log("| --- | --- | --- | --- | --- |");
  for (const [name, r] of Object.entries(result.out)) {
    const step = med(r.perStep);
    const whole = med(r.perAnswer);
    console.log(`| ${name} | ${step.toFixed(3)} ms | ${whole.toFixed(1)} ms | ${(whole / med(base.perAnswer)).toFixed(1)}x | ${med(r.replaced).toFixed(2)} |`);
  }
} finally {
  await ctx.close();
  rmSync(profile, { recursive: true, force: true });
}
