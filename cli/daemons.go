package cli

import (
	"context"
	"errors"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/config"
)

// Daemons are the long-running parts of the scion binary: the Hub (scion
// server start, with or without the workstation's broker), the Runtime
// Broker (scion runtime-broker start) and the demo image build. The CLI
// parses their flags and calls them; cmd/scion fills them from package
// launch, so that this package imports only api, client and config and
// none of the Hub, the stores or the runtimes.
//
// An error they return that has a method Usage() bool reporting true (at
// any depth of its chain) is a mistake in the command line: scion exits 2
// as for a bad flag.
type Daemons struct {
	// Server runs a Hub until ctx ends or SIGINT or SIGTERM arrives.
	Server func(ctx context.Context, o config.ServerOptions) error
	// Broker runs this machine's Runtime Broker likewise.
	Broker func(ctx context.Context, o config.BrokerOptions) error
	// BuildDemoImage builds the demo agent image from this binary and
	// returns its tag and the binary's path.
	BuildDemoImage func(ctx context.Context) (tag, binary string, err error)
	// Check runs `scion check`'s probes (spoke/check/probe) and returns
	// what they found; an error is one that stopped the check itself.
	Check func(ctx context.Context, o config.CheckOptions) (*api.CheckReport, error)
}

// errNoDaemon is what a daemon command answers in a build (a test) whose
// root was given no Daemons.
var errNoDaemon = errors.New("this scion was built without its daemons (cmd/scion provides them)")
