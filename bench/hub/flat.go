package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/scion-go/scion/api"
)

// flatOrder is the brokers runFlat measures (-order).
var flatOrder string

// flatOps are what -flat measures on each Hub, in order: n creates with
// start, then a stop and a start of each created agent.
var flatOps = []string{"create", "stop", "start"}

// runFlat compares a flat Runtime Broker instance with a regular broker,
// in process: on a flat one a create also writes the agent's pin, and
// every action on a pinned agent runs the placement check (plan.Reach)
// over the agent's and the broker's records. The runtime is the same fake
// in both (a flat instance's real runtime is Docker or Kubernetes, which
// the product has no fake for), so the difference is the Hub's, and the
// flat broker's own checks of each command's pin. By default the two are measured regular, flat, flat,
// regular (a fresh Hub each), so that a machine slowing down or speeding
// up over the run weighs on both alike.
func runFlat(engines, levels string, n int) int {
	ls := strings.Split(levels, ",")
	conc, _ := strconv.Atoi(ls[len(ls)-1])
	fmt.Printf("flat vs regular Runtime Broker, in process (the same fake runtime in both: the Hub's cost, and the flat broker's own pin checks), concurrency %d, %d agents: create with start, then stop, then start each\n", conc, n)
	for _, eng := range strings.Split(engines, ",") {
		fmt.Printf("%-9s %-8s %-6s %8s %9s %9s %9s %10s  %s\n", "engine", "broker", "op", "ops/s", "p50", "p99", "max", "cpu (all)", "loadavg")
		all := map[string][]result{} // variant/op
		failed := false
		for _, variant := range strings.Split(flatOrder, ",") {
			if variant != "regular" && variant != "flat" {
				fmt.Fprintf(os.Stderr, "unknown broker %q (use regular and flat)\n", variant)
				return 1
			}
			flat := variant == "flat"
			rs, err := flatRun(eng, conc, n, flat)
			if err != nil {
				fmt.Fprintf(os.Stderr, "%s %s: %v\n", eng, variant, err)
				if eng == "postgres" && os.Getenv("SCION_TEST_POSTGRES_URL") == "" {
					failed = true
					break
				}
				return 1
			}
			for i, op := range flatOps {
				r := rs[i]
				fmt.Printf("%-9s %-8s %-6s %8.0f %9s %9s %9s %10s  %s\n", eng, variant, op, r.rate,
					r.p50.Round(time.Microsecond), r.p99.Round(time.Microsecond), r.max.Round(time.Microsecond),
					r.selfCPU.Round(time.Microsecond), r.load)
				all[variant+"/"+op] = append(all[variant+"/"+op], r)
			}
		}
		if failed {
			continue
		}
		if len(all["flat/create"]) == 0 || len(all["regular/create"]) == 0 {
			continue
		}
		// The i-th flat run is paired with the i-th regular run (with the
		// default order, the 1st run with the 2nd and the 3rd with the
		// 4th): the pairs' ratios are the spread of the ratio of means.
		fmt.Printf("%s flat/regular (ratio of the means over the runs; in brackets each pair's):\n", eng)
		for _, op := range flatOps {
			reg, fl := all["regular/"+op], all["flat/"+op]
			ratio := func(f func(result) float64) string {
				var sf, sr float64
				var pairs []string
				for i := range min(len(fl), len(reg)) {
					pairs = append(pairs, fmt.Sprintf("%.2f", f(fl[i])/f(reg[i])))
				}
				for _, r := range fl {
					sf += f(r) / float64(len(fl))
				}
				for _, r := range reg {
					sr += f(r) / float64(len(reg))
				}
				return fmt.Sprintf("%.2f [%s]", sf/sr, strings.Join(pairs, " "))
			}
			rate := func(r result) float64 { return r.rate }
			p50 := func(r result) float64 { return float64(r.p50) }
			p99 := func(r result) float64 { return float64(r.p99) }
			cpu := func(r result) float64 { return float64(r.selfCPU) }
			fmt.Printf("  %-6s ops/s %s  p50 %s  p99 %s  cpu %s\n", op, ratio(rate), ratio(p50), ratio(p99), ratio(cpu))
		}
		fmt.Println()
	}
	return 0
}

// flatRun measures, on a fresh Hub with one broker (flat or regular),
// n creates with start, then n stops and n starts of those agents, at
// concurrency conc; one result per flatOps.
func flatRun(eng string, conc, n int, flat bool) ([]result, error) {
	ctx := context.Background()
	var target *api.RuntimeTarget
	if flat {
		target = &api.RuntimeTarget{Type: api.RuntimeTargetDocker}
	}
	env, err := startInproc(ctx, eng, 1, target)
	if err != nil {
		return nil, err
	}
	defer env.close()
	cl, broker := env.cl, env.names[0]
	var rs []result
	for _, op := range flatOps {
		do := func(name string, _ int) error {
			var err error
			if op == "create" {
				_, err = cl.CreateAgent(ctx, api.CreateAgentRequest{Name: name, Project: "default", Broker: broker, Start: true, Command: []string{"x"}})
			} else {
				_, err = cl.AgentAction(ctx, name, "default", op)
			}
			return err
		}
		var self0 time.Duration
		r, err := drive(conc, n, do, func() { self0 = procCPU(os.Getpid()) })
		if err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
		r.selfCPU = (procCPU(os.Getpid()) - self0) / time.Duration(n)
		rs = append(rs, r)
		if op == "create" { // the runs measure what they say only if so
			a, err := cl.GetAgent(ctx, "a-0", "default")
			if err != nil {
				return nil, err
			}
			if pinned := a.PinnedRuntimeTarget != nil; pinned != flat {
				return nil, fmt.Errorf("agent a-0 pinned %v on a flat=%v broker", pinned, flat)
			}
		}
	}
	return rs, nil
}
