// Command scion is the one binary of Scion: the Hub server, the Runtime
// Broker daemon and the CLI.
package main

import (
	"os"

	"github.com/scion-go/scion/cli"
)

func main() { os.Exit(cli.Execute()) }
