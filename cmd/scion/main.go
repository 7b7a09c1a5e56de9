// Command scion is the one binary of Scion: the Hub server, the Runtime
// Broker daemon and the CLI.
package main

import (
	"fmt"
	"os"
	"runtime/pprof"

	"github.com/scion-go/scion/cli"
	"github.com/scion-go/scion/launch"
)

func main() { os.Exit(run()) }

// run is the CLI; with SCION_CPUPROFILE naming a file it also writes a CPU
// profile of the whole run there when the command returns (a daemon: when
// it shuts down on SIGTERM or SIGINT). Off unless the environment asks, so
// only whoever starts the process can turn it on; bench/hub uses it to
// profile the Hub and the broker in the shape users run them.
func run() int {
	if p := os.Getenv("SCION_CPUPROFILE"); p != "" {
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			fmt.Fprintf(os.Stderr, "SCION_CPUPROFILE: %v\n", err)
			return 1
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintf(os.Stderr, "SCION_CPUPROFILE: %v\n", err)
			return 1
		}
		defer pprof.StopCPUProfile()
	}
	return cli.Execute(cli.Daemons{Server: launch.Server, Broker: launch.Broker, BuildDemoImage: launch.BuildDemoImage, Check: launch.Check})
}
