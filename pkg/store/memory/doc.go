// Package memory is an in-process chat.Store for local runs (cmd/devserver)
// and fast tests.
//
// It keeps sessions and turns in maps behind one mutex and follows the
// same contract as pkg/store/dynamo, proven by the same suite
// (pkg/store/storetest): lease token checks, the terminal window,
// takeover of crashed turns with chat.SequenceGapAfterCrash, superseded
// turns hidden from history, and HMAC-signed page cursors
// (chat.CursorCodec). Each method runs atomically under the mutex, so the
// races the DynamoDB store settles with conditional writes cannot happen
// here and ErrConflict is never returned; the session revision still
// increases with every session write. Like the DynamoDB store it keeps
// times at millisecond precision, in UTC. Everything it stores or returns
// is a deep copy, so callers may mutate what they pass or receive. Nothing
// is persisted: the data is gone when the process exits.
package memory
