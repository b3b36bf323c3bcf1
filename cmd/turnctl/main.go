// Command turnctl is turnstream's terminal tool for the AgentsKit Chat turn
// protocol v1 (docs/design.md#wire-protocol-v1, docs/design.md#running-it).
//
// Usage:
//
//	turnctl validate < events.ndjson
//	turnctl chat [-url URL] [-session ID] [-token TOKEN | -sigv4] [-json] [message...]
//	turnctl attach -session ID [-turn ID] [-url URL] [-history URL] [-token TOKEN | -sigv4] [-json]
//	turnctl history -session ID [-url URL] [-token TOKEN | -sigv4] [-json]
//	turnctl usage [-period day|month] [-tenant] [-url URL] [-token TOKEN | -sigv4] [-json]
//	turnctl conform -turn URL -history URL [-artifacts URL] [-token TOKEN | -sigv4]
//
// chat, history and usage (chat.go, history.go, usage.go) talk to a turn
// and a history function, the dev server's by default, through
// pkg/client; usage prints the caller's usage ledger and quotas
// (docs/quotas.md); chat
// reattaches to a turn whose stream drops, and attach (attach.go) follows
// a running turn, over the turn function's resume route; conform
// (conform.go) checks a deployment against the protocol, black-box.
// Requests carry a bearer token or are signed with AWS SigV4 (auth.go);
// text from a server is escaped and measured in terminal columns before
// it is shown (display.go). `turnctl <command> -h` describes each command and exits 0.
// The default URLs are the dev server's, or $TURNSTREAM_TURN_URL,
// $TURNSTREAM_HISTORY_URL and $TURNSTREAM_ARTIFACTS_URL when set.
//
// validate reads one turn event per input line from stdin and writes one
// line per input line to stdout: {"ok":true,"event":"<kind>"} or
// {"ok":false,"diagnostic":{...}} with the decoder's diagnostic exactly as
// AgentsKit encodes it. It exits 0 when every line decoded, 1 otherwise.
// An unknown subcommand prints the usage on stderr and exits 2.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// command is one turnctl subcommand: it gets the arguments after its name
// and the process streams, and returns the exit status.
type command struct {
	summary string
	run     func(args []string, stdin io.Reader, stdout, stderr io.Writer) int
}

// commands lists the subcommands by name.
var commands = map[string]command{
	"validate": {
		summary: "decode one turn event per stdin line; print one verdict line each",
		run: func(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
			fs := flag.NewFlagSet("validate", flag.ContinueOnError)
			if status, ok := parseFlags(fs, args, validateUsage, stdout, stderr); !ok {
				return status
			}
			if fs.NArg() != 0 {
				_, _ = fmt.Fprintln(stderr, "turnctl validate: takes no arguments; events are read from stdin")
				return 2
			}
			return runValidate(stdin, stdout, stderr)
		},
	},
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run dispatches args[0] to its subcommand and returns the exit status.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	cmd, ok := commands[args[0]]
	if !ok {
		if args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
			usage(stdout)
			return 0
		}
		usage(stderr)
		return 2
	}
	return cmd.run(args[1:], stdin, stdout, stderr)
}

// usage prints the command list; a failed write of usage text has no
// better place to be reported, so write errors are ignored.
func usage(w io.Writer) {
	var b strings.Builder
	b.WriteString("usage: turnctl <command> [arguments]\n\ncommands:\n")
	for _, name := range sortedNames() {
		fmt.Fprintf(&b, "  %-10s %s\n", name, commands[name].summary)
	}
	_, _ = io.WriteString(w, b.String())
}

func sortedNames() []string {
	names := make([]string, 0, len(commands))
	for name := range commands {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// validateUsage documents `turnctl validate`.
const validateUsage = `usage: turnctl validate < events.ndjson

Reads one turn event per input line (split on "\n" only) and writes one
line per input line: {"ok":true,"event":"<kind>"} or
{"ok":false,"diagnostic":{...}} with the decoder's diagnostic exactly as
AgentsKit encodes it. Exit status 0 when every line decoded, 1 otherwise.
`

// parseFlags parses a subcommand's args with fs. With -h (-help, --help)
// it prints usage and fs's flags on stdout and returns (0, false); after a
// bad flag, the flag package's message and the same text go to stderr and
// it returns (2, false). Otherwise it returns (0, true).
func parseFlags(fs *flag.FlagSet, args []string, usage string, stdout, stderr io.Writer) (int, bool) {
	fs.SetOutput(stderr)
	fs.Usage = func() {}
	err := fs.Parse(args)
	if err == nil {
		return 0, true
	}
	w, status := stderr, 2
	if errors.Is(err, flag.ErrHelp) {
		w, status = stdout, 0
	}
	_, _ = io.WriteString(w, usage)
	if hasFlags(fs) {
		_, _ = io.WriteString(w, "\nflags:\n")
		fs.SetOutput(w)
		fs.PrintDefaults()
	}
	return status, false
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}
