package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/wire"
)

// movesMode is -moves; brokerCaps are what the in-process brokers
// advertise (the moves mode's take part in moves).
var (
	movesMode  bool
	brokerCaps []string
)

// runMoves measures a move's dry run through the API (POST
// /agents/{agent}/reincarnate with dryRun and force: the Hub loads the
// agent, its project, both brokers, the target's reservations and limit,
// and runs every check) on a Hub with 50 brokers and 5,000 agents placed,
// n dry runs at the concurrency of -c's last level, each of an agent to a
// broker other than its own. Forced, because the bench's agents have no
// recorded placement: the export checks are waived and the checks run to
// the end, so every answer is an eligible plan.
func runMoves(engines, levels string, n int) int {
	ls := strings.Split(levels, ",")
	conc, _ := strconv.Atoi(ls[len(ls)-1])
	const brokers, agents = 50, 5000
	brokerCaps = []string{wire.CapAgentMove, wire.CapAgentMoveRecreate}
	fmt.Printf("a move's dry run through the Hub API (reincarnate --broker --dry-run --force), %d brokers, %d agents placed, concurrency %d, %d dry runs\n",
		brokers, agents, conc, n)
	fmt.Printf("%-9s %5s %11s %9s %9s %9s\n", "engine", "conc", "dry runs/s", "p50", "p99", "max")
	ctx := context.Background()
	for _, eng := range strings.Split(engines, ",") {
		env, err := startInproc(ctx, eng, brokers, nil)
		if err == nil {
			err = placeAgents(ctx, env.st, env.projectID, env.ids, agents)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", eng, err)
			env.close()
			return 1
		}
		dry := func(_ string, i int) error {
			a := i % agents // placed on broker a % brokers
			target := env.names[(a%brokers+1+(i/agents)%(brokers-1))%brokers]
			p, err := env.cl.MoveDryRun(ctx, fmt.Sprintf("old-%05d", a), "default",
				api.ReincarnateRequest{Broker: target, DryRun: true, Force: true})
			if err == nil && !p.Eligible {
				err = fmt.Errorf("dry run of old-%05d to %s: not eligible: %+v", a, target, p.Checks)
			}
			return err
		}
		res, err := drive(conc, n, dry, func() {})
		env.close()
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", eng, err)
			return 1
		}
		fmt.Printf("%-9s %5d %11.0f %9s %9s %9s\n", eng, conc, res.rate,
			res.p50.Round(time.Microsecond), res.p99.Round(time.Microsecond), res.max.Round(time.Microsecond))
	}
	return 0
}
