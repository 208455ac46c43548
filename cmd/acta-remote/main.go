// Command acta-remote is a Prometheus remote-write/remote-read and OTLP
// metrics storage backend that keeps every series in its own Acta v0.2 file.
//
// Usage:
//
//	acta-remote [serve] [--config FILE] [--listen ADDR] [--data-dir DIR] [--mode write|query]
//	acta-remote inspect FILE
//	acta-remote head FILE [-n N] [--json]
//	acta-remote validate FILE [--level structural|full]
//	acta-remote recover FILE [--repair]
//	acta-remote recover --salvage FILE [--out FILE] [--schema-from FILE] [--json]
//	acta-remote recover --salvage --data-dir DIR [--schema-from FILE] [--json]
//	acta-remote query --data-dir DIR [--config FILE] [--start T] [--end T] [--json] SELECTOR
//	acta-remote tail --data-dir DIR [--since D] [--poll D] [--json] SELECTOR
//
// Each subcommand lives in its own file and registers itself in commands.
package main

import (
	"fmt"
	"os"
	"sort"
	"strings"
)

// Exit codes shared by the file commands (inspect, head, validate, recover);
// docs/operations.md lists them.
const (
	exitOK          = 0
	exitError       = 1 // anything else: usage, I/O, ...
	exitCorrupt     = 2 // the file is corrupt (message carries the offset)
	exitUnsupported = 3 // another format version, an undecodable feature, or beyond the reader's limits
	exitLossy       = 4 // recover --salvage wrote a file, but damaged bytes were skipped: data was lost
)

// command is one subcommand: it parses args (without the subcommand name)
// and returns the process exit code.
type command struct {
	summary string
	run     func(args []string) int
}

// commands is filled by each subcommand file's init.
var commands = map[string]command{}

func register(name, summary string, run func(args []string) int) {
	if _, dup := commands[name]; dup {
		panic("BUG: command registered twice: " + name)
	}
	commands[name] = command{summary: summary, run: run}
}

func main() {
	args := os.Args[1:]
	name := "serve"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name, args = args[0], args[1:]
	}
	if name == "help" {
		usage()
		os.Exit(exitOK)
	}
	cmd, ok := commands[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "acta-remote: unknown command %q\n", name)
		usage()
		os.Exit(exitError)
	}
	os.Exit(cmd.run(args))
}

func usage() {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintln(os.Stderr, "usage: acta-remote [command] [flags]  (default command: serve)")
	for _, n := range names {
		fmt.Fprintf(os.Stderr, "  %-10s %s\n", n, commands[n].summary)
	}
}
