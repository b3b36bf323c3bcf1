// Package benchwire is the rig the benchmarks (cmd/turnbench,
// internal/throughput) drive turns through: the dev server's handler
// (internal/devserver, dev auth, the echo model) served over loopback
// HTTP on a store, each request traced (internal/loadcheck's Traces, so
// that its DynamoDB calls can be counted), with the turn handler's
// options set per wiring (the echo pace, checkpoints, pacing, the lease).
//
// Its clients are pkg/client's, as the bench principal (Subject), over
// HTTP clients whose connections can count the bytes they read
// (NewHTTPClient); Follow reads a stream line by line with each line's
// arrival time and size, decoding all of them or only the last. SeedTurns
// writes saved turns into a session through the store's own claim, save
// and release, and LongAnswer makes the echo model answer a short prompt
// (Ask) at length.
package benchwire
