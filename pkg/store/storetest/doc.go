// Package storetest is the contract suite of chat.Store: one set of named
// subtests that every implementation (pkg/store/memory, pkg/store/dynamo
// against a DynamoDB API server) must pass.
//
// The suite drives a store only through the chat.Store interface. Time is a
// manual Clock that the suite advances, so lease expiry is tested to the
// millisecond without sleeping; every subtest gets a fresh, empty store from
// the Factory. The suite keeps its request count small (a few hundred
// requests per run) because the DynamoDB run goes over HTTP.
package storetest
