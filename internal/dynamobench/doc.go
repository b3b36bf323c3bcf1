// Package dynamobench measures a dynamo.Store's DynamoDB traffic for
// benchmarks and checks (cmd/turnbench, internal/loadcheck, the store
// budget tests) without their importing the AWS SDK, which only
// pkg/store/dynamo and this package may. It reads the store's items
// through the store's own key functions (pkg/store/dynamo keys.go), so
// that it follows the table layout:
//
//   - Observer is SDK middleware for dynamo.NewClient that reports each
//     API call (what it asked, described by Request, and how it ended,
//     with the capacity it consumed when asked), each of its HTTP
//     attempts, so that retries show, and each attempt's round trip
//     alone (its times and body bytes);
//   - Meter, the one meter of every benchmark section and check, is a
//     dynamo.Client between a Store and its client that bills each call
//     as AWS does (requests, read and write units, the local secondary
//     indexes' included) into its session's account and a running total,
//     and keeps each write's units under the store's label of it
//     (dynamo.Purpose);
//   - CompareAndSet is one conditional UpdateItem of the shape of every
//     store write, the baseline of a server's write ceiling, and
//     CompareAndSetOwned the same for an item's only writer, which
//     recognises its own effect on a retry;
//   - Shapes are that write with one feature of the store's turn writes
//     added each, to set a feature's cost beside the bare write's;
//   - Classify says what a call of a turn request is for (the claim and
//     its writes, the context load, a renewal, the save, the release, a
//     checkpoint) from its request.
package dynamobench
