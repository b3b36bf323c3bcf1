// Package coldstart is turnbench's cold-start lab: it builds the Lambda
// bootstraps (internal/lambdabin) and measures how they start under the
// Lambda runtime interface emulator, against a minimal Go function URL
// bootstrap measured in the same run.
//
// Measure runs each bootstrap under aws-lambda-rie through a self-exec
// wrapper (MaybeExec: the emulator runs the measuring binary itself,
// which stamps the time and execs the bootstrap) and a proxy in front of
// the Runtime API, so that a cold start is exec -> the bootstrap's first
// Runtime API request; it reads the bootstrap's CPU time until then from
// the scheduler, drives a few invocations and reads its peak memory
// (VmHWM). Beside the emulator runs, it runs each bootstrap directly with
// GODEBUG=inittrace=1 for a start-up account: what the package inits
// cost, by module. It reports the binaries' sizes (linux/arm64 release
// builds) too, and, with Settings.Upstream, the turn bootstrap built
// against upstream jsonschema beside the one built against the fork in
// third_party/jsonschema (third_party/jsonschema/PATCHES.md).
//
// StartEmulator runs one bootstrap under the emulator for a section that
// drives it itself (internal/cpushare), optionally inside a cgroup, and
// reports each invocation's time to the first line of a streamed
// response as it reached the Runtime API.
//
// Rows and DetailRows render a Report as rows of turnbench's table.
package coldstart
