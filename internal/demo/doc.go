// Package demo serves the demo chat page of the dev server: a chat built on
// the browser client in clients/js, embedded in the binary so that the dev
// server needs no network, no CDN and no Node.js at run time.
//
// The page's three files (index.html, app.css, app.js) are built from
// clients/js by `make js-build` and committed under assets/, so `go build`
// and `go test` work on a fresh clone; the JS test suite (run by `make
// test`) fails when the committed files differ from a fresh build of their
// sources. The page talks to the same origin only: the turn function under
// /turn/ and the history function under /history/.
package demo
