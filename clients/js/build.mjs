// Builds the client and the demo page with the pinned esbuild (root
// package.json):
//
//   dist/turnstream.js       the client as one ES module (tests, apps)
//   dist/turnstream.min.js   the same, minified: the size that is reported
//   ../../internal/demo/assets/{index.html,app.css,app.js,signin.js,syntax.js}
//                            the demo page the dev server embeds (committed,
//                            so that go build works without Node)
//
// node build.mjs             builds both
// node build.mjs --client    builds dist/ only (what the tests import)
// node build.mjs --check     builds the demo into a temporary directory and
//                            fails when the committed assets differ
import { build } from "esbuild";
import { gzipSync } from "node:zlib";
import { mkdtempSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync, copyFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
export const assetsDir = join(here, "../../internal/demo/assets");

const common = { bundle: true, format: "esm", target: "es2022", platform: "neutral", legalComments: "none", logLevel: "warning" };

/** buildClient writes dist/ and returns the minified size in bytes, raw and gzipped. */
export async function buildClient(outdir = join(here, "dist")) {
  mkdirSync(outdir, { recursive: true });
  await build({ ...common, entryPoints: [join(here, "src/index.ts")], outfile: join(outdir, "turnstream.js") });
  await build({ ...common, entryPoints: [join(here, "src/index.ts")], outfile: join(outdir, "turnstream.min.js"), minify: true });
  const min = readFileSync(join(outdir, "turnstream.min.js"));
  return { minified: min.length, gzip: gzipSync(min, { level: 9 }).length };
}

// The demo page bundles marked (MIT) and DOMPurify (Apache-2.0 or
// MPL-2.0), pinned in the root package.json; their notices stay in app.js.
// (No URL in it: the page names no other origin, internal/demo's test checks.)
const demoBanner = "/*! turnstream demo page. Includes marked 18 (MIT License, Copyright (c) 2018-2026 MarkedJS, (c) 2011-2018 Christopher Jeffrey; github.com/markedjs/marked) and DOMPurify 3 (Apache-2.0 or MPL-2.0, (c) Cure53 and other contributors; github.com/cure53/DOMPurify). */";

/**
 * DEMO_GZIP_BUDGET is what the demo page may weigh, gzipped, its three
 * files together (index.html, app.css, app.js): the client, marked,
 * DOMPurify and the page itself. bundle.test.mjs fails above it. It was
 * 56 KiB until attachments (the attach button, chips with progress,
 * thumbnails, and the client's uploadAttachment) took the page from
 * 55.9 to 59.5 KiB; 60 KiB until branches (the "‹ 2 / 3 ›" switcher
 * with its prefetch, Fork, and the client's readTurn, selectTurn and
 * forkSession) took it from 59.8 to 61.0 KiB; 62 KiB until syntax
 * highlighting (the token colours of both schemes in app.css, and the
 * loader of syntax.js in app.js) took it from 61.8 to 62.3 KiB.
 */
export const DEMO_GZIP_BUDGET = 63 * 1024;

// The sign-in script bundles oidc-client-ts (Apache-2.0) and jwt-decode
// (MIT), which it depends on; only a page that signs in with OpenID
// Connect loads it (demo/identity.ts).
const signinBanner = "/*! turnstream chat page sign-in. Includes oidc-client-ts 3 (Apache-2.0, (c) Authts contributors; github.com/authts/oidc-client-ts) and jwt-decode 4 (MIT License, (c) Auth0; github.com/auth0/jwt-decode). */";

/**
 * SIGNIN_GZIP_BUDGET is what signin.js may weigh, gzipped: the OpenID
 * Connect client a signed-in page loads besides the page itself.
 */
export const SIGNIN_GZIP_BUDGET = 20 * 1024;

// The syntax highlighter bundles highlight.js (BSD-3-Clause), its core and
// the languages demo/syntax.ts names; only a page that shows a code block
// naming a language loads it (demo/markdown.ts).
const syntaxBanner = "/*! turnstream chat page syntax highlighting. Includes highlight.js 11 (BSD-3-Clause License, (c) 2006 Ivan Sagalaev and other contributors; github.com/highlightjs/highlight.js). */";

/**
 * SYNTAX_GZIP_BUDGET is what syntax.js may weigh, gzipped: the highlighter
 * and its 15 languages, loaded besides the page the first time an answer
 * holds a code block that names a language.
 */
export const SYNTAX_GZIP_BUDGET = 24 * 1024;

/** syntaxSize returns syntax.js's gzipped size in dir. */
export function syntaxSize(dir = assetsDir) {
  return gzipSync(readFileSync(join(dir, "syntax.js")), { level: 9 }).length;
}

/** signinSize returns signin.js's gzipped size in dir. */
export function signinSize(dir = assetsDir) {
  return gzipSync(readFileSync(join(dir, "signin.js")), { level: 9 }).length;
}

/** demoSize returns the gzipped size of each file in dir and their total. */
export function demoSize(dir = assetsDir) {
  const files = {};
  let total = 0;
  for (const name of ["index.html", "app.css", "app.js"]) {
    const n = gzipSync(readFileSync(join(dir, name)), { level: 9 }).length;
    files[name] = n;
    total += n;
  }
  return { files, total };
}

/** buildDemo writes the demo page's three files into outdir. */
export async function buildDemo(outdir = assetsDir) {
  mkdirSync(outdir, { recursive: true });
  await build({
    ...common,
    platform: "browser",
    entryPoints: [join(here, "demo/app.ts")],
    outfile: join(outdir, "app.js"),
    minify: true,
    legalComments: "eof",
    banner: { js: demoBanner },
    // Loaded on demand, built below: a dev page never fetches signin.js,
    // a chat without a code block that names a language never syntax.js.
    external: ["./signin.js", "./syntax.js"],
  });
  await build({
    ...common,
    platform: "browser",
    entryPoints: [join(here, "demo/syntax.ts")],
    outfile: join(outdir, "syntax.js"),
    minify: true,
    legalComments: "eof",
    banner: { js: syntaxBanner },
  });
  await build({
    ...common,
    platform: "browser",
    entryPoints: [join(here, "demo/signin.ts")],
    outfile: join(outdir, "signin.js"),
    minify: true,
    legalComments: "eof",
    banner: { js: signinBanner },
  });
  copyFileSync(join(here, "demo/index.html"), join(outdir, "index.html"));
  copyFileSync(join(here, "demo/style.css"), join(outdir, "app.css"));
}

/** staleAssets lists the committed demo files that differ from a fresh build. */
export async function staleAssets() {
  const tmp = mkdtempSync(join(tmpdir(), "turnstream-demo-"));
  try {
    await buildDemo(tmp);
    const fresh = readdirSync(tmp).sort();
    const stale = [];
    for (const name of fresh) {
      let committed;
      try {
        committed = readFileSync(join(assetsDir, name));
      } catch {
        stale.push(name);
        continue;
      }
      if (!committed.equals(readFileSync(join(tmp, name)))) stale.push(name);
    }
    for (const name of readdirSync(assetsDir)) if (!fresh.includes(name)) stale.push(name);
    return stale;
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  if (process.argv.includes("--check")) {
    const stale = await staleAssets();
    if (stale.length) {
      console.error(`clients/js: the committed demo bundle is stale (${stale.join(", ")}); run make js-build and commit internal/demo/assets`);
      process.exit(1);
    }
    console.log("clients/js: the committed demo bundle matches its sources");
  } else if (process.argv.includes("--client")) {
    const size = await buildClient();
    console.log(`clients/js: dist/turnstream.min.js ${size.minified} bytes, ${(size.gzip / 1024).toFixed(1)} KiB gzip`);
  } else {
    const size = await buildClient();
    await buildDemo();
    const demo = demoSize();
    console.log(`clients/js: dist/turnstream.min.js ${size.minified} bytes, ${(size.gzip / 1024).toFixed(1)} KiB gzip; demo built into internal/demo/assets, ${(demo.total / 1024).toFixed(1)} KiB gzip (budget ${DEMO_GZIP_BUDGET / 1024} KiB), signin.js ${(signinSize() / 1024).toFixed(1)} KiB gzip (budget ${SIGNIN_GZIP_BUDGET / 1024} KiB), syntax.js ${(syntaxSize() / 1024).toFixed(1)} KiB gzip (budget ${SYNTAX_GZIP_BUDGET / 1024} KiB)`);
  }
}
