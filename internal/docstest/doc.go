// Package docstest checks that the repository's documents say what the
// code does and that its references to them lead somewhere: every
// "docs/<file>.md#<anchor>" names a heading of that file (anchors as
// GitHub derives them from headings), every link inside a docs page to
// one of its headings or another page's resolves, every
// "docs/decisions.md D-NNNN" names a decision ("## D-NNNN ..."), no
// citation names a section by number ("§N": headings are cited by
// anchor), and no citation of the engineers' private notes,
// which are not part of the repository, is left (docs/design.md is the
// design, docs/protocol.md the wire rules, docs/decisions.md the
// decisions). The error table of docs/design.md#errors is checked against
// pkg/httpedge's. TestREADMERunsAsPasted runs the shell blocks of the
// README's first session and of docs/walkthrough.md in order, as a reader
// pastes them, against dev servers it starts as the blocks' make dev lines
// say (docs/deploy.md's blocks are internal/deploytest's). It holds tests
// only.
package docstest
