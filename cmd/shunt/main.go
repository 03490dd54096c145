// Command shunt is the CLI over the shunt library: serve, get, net, bench.
package main

import (
	"os"

	"github.com/shunt-net/shunt/cmd/shunt/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:])) }
