// Package demo serves the demo chat page of the dev server: a chat built on
// the browser client in clients/js, embedded in the binary so that the dev
// server needs no network, no CDN and no Node.js at run time.
//
// The page's files (index.html, app.css, app.js; signin.js, which only a
// page that signs in with OpenID Connect loads; syntax.js, the code
// highlighter a page loads when an answer first shows a code block that
// names a language) are built from
// clients/js by `make js-build` and committed under assets/, so `go build`
// and `go test` work on a fresh clone; the JS test suite (run by `make
// test`) fails when the committed files differ from a fresh build of their
// sources. The page talks to its own origin (the turn function under
// /turn/, the history function under /history/, the artifacts function
// under /artifacts/) and, when it signs in with OpenID Connect, to its
// issuer. Deployed, the history function serves it (CHAT_PAGE=on) behind
// the stack's CloudFront distribution, which gives the three functions
// those paths on one origin (docs/chat-page.md).
package demo
