package launch

import (
	"context"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/config"
	"github.com/scion-go/scion/spoke/check/probe"
)

// Check is `scion check` (cli.Daemons.Check): spoke/check/probe's run
// with the default ways of reaching spokes and the Hub.
func Check(ctx context.Context, o config.CheckOptions) (*api.CheckReport, error) {
	return probe.Run(ctx, o, probe.Env{})
}
