// Command scion is the one binary of Scion: the Hub server, the Runtime
// Broker daemon and the CLI.
package main

import (
	"os"

	"github.com/scion-go/scion/cli"
	"github.com/scion-go/scion/launch"
)

func main() {
	os.Exit(cli.Execute(cli.Daemons{Server: launch.Server, Broker: launch.Broker, BuildDemoImage: launch.BuildDemoImage}))
}
