// Package cli holds shunt's subcommands. Each command lives in its own file and
// registers itself in init, so main stays a one-liner and commands stay independent.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"
)

// Command is one subcommand of shunt.
type Command struct {
	Name  string
	Usage string // one line: "serve --root DIR --addr HOST:PORT [--tls]"
	Short string // what it does, for the top-level help
	// Run gets the arguments after the command name and a context cancelled on
	// SIGINT/SIGTERM. It returns an error for the user; flag.ErrHelp prints usage.
	Run    func(ctx context.Context, args []string) error
	Hidden bool
}

var commands = map[string]*Command{}

// Register adds a command; called from init functions of this package.
func Register(c *Command) {
	if _, dup := commands[c.Name]; dup {
		panic("cli: duplicate command " + c.Name)
	}
	commands[c.Name] = c
}

// Main runs the command named by args[0] and returns the process exit code.
func Main(args []string) int {
	if len(args) == 0 {
		usage(os.Stderr)
		return 2
	}
	if isHelp(args[0]) {
		if len(args) > 1 && !isHelp(args[1]) {
			// `shunt help CMD` is `shunt CMD --help` (an unknown CMD fails there).
			return Main([]string{args[1], "--help"})
		}
		usage(os.Stdout)
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(os.Stderr, "shunt: unknown command %q\n", args[0])
		usage(os.Stderr)
		return 2
	}
	if helpAsked(args[1:]) {
		// Asked-for help is output, not an error: the flag packages print
		// usage to stderr, so it goes to stdout for this run.
		defer func(stderr *os.File) { os.Stderr = stderr }(os.Stderr)
		os.Stderr = os.Stdout
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := c.Run(ctx, args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(os.Stderr, "shunt %s: %v\n", c.Name, err)
		return 1
	}
	return 0
}

func isHelp(a string) bool { return a == "-h" || a == "-help" || a == "--help" || a == "help" }

// helpAsked reports whether a command's arguments ask for its help (before
// any "--", after which they belong to a command it runs).
func helpAsked(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if isHelp(a) && a != "help" {
			return true
		}
	}
	return false
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: shunt COMMAND [flags]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n, c := range commands {
		if !c.Hidden {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-8s %s\n", n, commands[n].Short)
	}
}

// newFlags returns a FlagSet that prints the command's usage line on error.
func newFlags(c *Command) *flag.FlagSet {
	fs := flag.NewFlagSet(c.Name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: shunt %s\n", c.Usage)
		fs.PrintDefaults()
	}
	return fs
}
