// Package dynamobench measures a dynamo.Store's DynamoDB traffic for
// benchmarks (cmd/turnbench) without their importing the AWS SDK, which
// only pkg/store/dynamo and this package may:
//
//   - Observer is SDK middleware for dynamo.NewClient that reports each
//     API call (what it asked, described by Request, and how it ended)
//     and each of its HTTP attempts, so that retries show;
//   - Meter is a dynamo.Client between a Store and its client that
//     accounts each session's requests and billed write units, the local
//     secondary indexes' included;
//   - CompareAndSet is one conditional UpdateItem of the shape of every
//     store write, the baseline of a server's write ceiling.
package dynamobench
