// patch-dynalite.mjs fixes one crash of the pinned dynalite 4.0.0 (the
// DynamoDB API server the Go tests run against) in node_modules, after
// `npm ci`: it is idempotent and refuses any other dynalite version.
//
// dynalite writes an item's index entries before the item itself. A Query
// of an index that fetches attributes from the table (a projection that
// does not hold them all) reads each matching item by its key; when that
// read meets an item still being created, dynalite gets nothing back and
// crashes on it (db/index.js, "itemSize" of undefined), taking down every
// test that shares the server. DynamoDB itself never returns an index
// entry without its item, so the patched server skips such an entry, as
// if the Query had run a moment earlier.
import { readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const root = join(import.meta.dirname, "..", "node_modules", "dynalite");
const marker = "turnstream: skip an index entry whose item is not written yet";
const version = JSON.parse(readFileSync(join(root, "package.json"), "utf8")).version;
if (version !== "4.0.0") {
  console.error(`patch-dynalite: dynalite ${version} is not the pinned 4.0.0; review the patch`);
  process.exit(1);
}
const file = join(root, "db", "index.js");
const src = readFileSync(file, "utf8");
if (src.includes(marker)) process.exit(0);
const before = `      itemDb.get(key, function (err, item) {
        if (err) {`;
const after = `      itemDb.get(key, function (err, item) {
        // ${marker} (scripts/patch-dynalite.mjs)
        if ((err && (err.notFound || err.name === 'NotFoundError')) || (!err && item == null)) return cb()
        if (err) {`;
if (src.split(before).length !== 2) {
  console.error("patch-dynalite: db/index.js does not hold the expected code once; review the patch");
  process.exit(1);
}
// Written beside it, then renamed over it: a dynalite starting meanwhile
// (internal/dynalite runs this script too) reads one whole file or the other.
const tmp = `${file}.${process.pid}.tmp`;
writeFileSync(tmp, src.replace(before, after));
renameSync(tmp, file);
console.log("patch-dynalite: patched node_modules/dynalite/db/index.js");
