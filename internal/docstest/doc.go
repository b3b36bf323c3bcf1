// Package docstest checks that the repository's references to its own
// documents lead somewhere: every "docs/<file>.md §N" names a numbered
// section ("## N. Title") of that file, every "docs/decisions.md D-NNNN"
// names a decision ("## D-NNNN ..."), and no citation of the engineers'
// private notes, which are not part of the repository, is left
// (docs/design.md is the design, docs/protocol.md the wire rules,
// docs/decisions.md the decisions). It holds tests only.
package docstest
