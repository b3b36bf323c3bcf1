// patch-dynalite.mjs fixes two crashes of the pinned dynalite 4.0.0 (the
// DynamoDB API server the Go tests run against) in node_modules, after
// `npm ci`: it is idempotent and refuses any other dynalite version.
//
// 1. dynalite writes an item's index entries before the item itself. A
// Query of an index that fetches attributes from the table (a projection
// that does not hold them all) reads each matching item by its key; when
// that read meets an item still being created, dynalite gets nothing back
// and crashes on it (db/index.js, "itemSize" of undefined), taking down
// every test that shares the server. DynamoDB itself never returns an
// index entry without its item, so the patched server skips such an entry,
// as if the Query had run a moment earlier.
//
// 2. dynalite throws from a request's 'error' event (index.js), so a
// client that gives up while sending a request body (an SDK attempt
// timeout on a loaded machine: "aborted", ECONNRESET) crashes the whole
// server. The patched server drops that request, as DynamoDB does.
import { readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const root = join(import.meta.dirname, "..", "node_modules", "dynalite");
const version = JSON.parse(readFileSync(join(root, "package.json"), "utf8")).version;
if (version !== "4.0.0") {
  console.error(`patch-dynalite: dynalite ${version} is not the pinned 4.0.0; review the patch`);
  process.exit(1);
}

// patch replaces before with after in root's file rel, once, unless marker
// is there already.
function patch(rel, marker, before, after) {
  const file = join(root, rel);
  const src = readFileSync(file, "utf8");
  if (src.includes(marker)) return;
  if (src.split(before).length !== 2) {
    console.error(`patch-dynalite: ${rel} does not hold the expected code once; review the patch`);
    process.exit(1);
  }
  // Written beside it, then renamed over it: a dynalite starting meanwhile
  // (internal/dynalite runs this script too) reads one whole file or the other.
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, src.replace(before, after));
  renameSync(tmp, file);
  console.log(`patch-dynalite: patched node_modules/dynalite/${rel}`);
}

const indexMarker = "turnstream: skip an index entry whose item is not written yet";
patch("db/index.js", indexMarker, `      itemDb.get(key, function (err, item) {
        if (err) {`, `      itemDb.get(key, function (err, item) {
        // ${indexMarker} (scripts/patch-dynalite.mjs)
        if ((err && (err.notFound || err.name === 'NotFoundError')) || (!err && item == null)) return cb()
        if (err) {`);

const abortMarker = "turnstream: a request its client aborted is dropped";
patch("index.js", abortMarker, `  req.on('error', function (err) { throw err })`,
  `  // ${abortMarker} (scripts/patch-dynalite.mjs)
  req.on('error', function () { res.destroy() })`);
