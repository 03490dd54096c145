// Package cli holds shunt's subcommands. Each command lives in its own file and
// registers itself in init, so main stays a one-liner and commands stay independent.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
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
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage()
		return 2
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(os.Stderr, "shunt: unknown command %q\n", args[0])
		usage()
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := c.Run(ctx, args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 2
		}
		fmt.Fprintf(os.Stderr, "shunt %s: %v\n", c.Name, err)
		return 1
	}
	return 0
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: shunt COMMAND [flags]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n, c := range commands {
		if !c.Hidden {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(os.Stderr, "  %-8s %s\n", n, commands[n].Short)
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
