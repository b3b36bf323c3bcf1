// Package archcheck measures the shape of the module's code, so that the
// figures docs/architecture.md quotes can be computed again after a change:
//
//   - Rooms: the import drawing of one package at file level. Each non-test
//     file is a room; a reference from one file to an identifier declared
//     in another file of the same package (a package-level name, a method or
//     a struct field, resolved with go/types) is an arrow between the two
//     rooms, counted once per ordered pair. Arrows "back up" are those that
//     point up a layering of the rooms (see Drawing.BackUp for the exact
//     definition).
//   - Limits: the largest method set of a type outside the store
//     implementations, the longest non-test file under pkg/, the largest
//     interface, and where each X-Turnstream-* header name is written.
//   - Lines per package and the module's import graph, with the arrows that
//     run against the layering docs/architecture.md draws.
//
// TestArchitecture (go test -v -run TestArchitecture ./internal/archcheck)
// prints every figure. The size limits of issue 33 (method sets, file
// lengths, interfaces) fail it when broken; the turn engine's import
// rules are reported, and fail it only with ARCHCHECK_ENFORCE=1.
// TestOneClock holds pkg/turn to its injected clock.
package archcheck
