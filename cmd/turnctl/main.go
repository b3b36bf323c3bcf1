// Command turnctl is turnstream's terminal tool for the AgentsKit Chat turn
// protocol v1 (DESIGN §2, §10).
//
// Usage:
//
//	turnctl validate < events.ndjson
//	turnctl chat [-url URL] [-session ID] [-token TOKEN | -sigv4] [-json] [message...]
//	turnctl history -session ID [-url URL] [-token TOKEN | -sigv4] [-json]
//
// chat and history (chat.go, history.go) talk to a turn and a history
// function, the dev server's by default; `turnctl <command> -h` describes
// each.
//
// validate reads one turn event per input line from stdin and writes one
// line per input line to stdout: {"ok":true,"event":"<kind>"} or
// {"ok":false,"diagnostic":{...}} with the decoder's diagnostic exactly as
// AgentsKit encodes it. It exits 0 when every line decoded, 1 otherwise.
// An unknown subcommand prints the usage on stderr and exits 2.
package main

import (
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
			if len(args) != 0 {
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
