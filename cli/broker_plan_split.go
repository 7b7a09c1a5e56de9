package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/scion-go/scion/cli/show"
	"github.com/scion-go/scion/internal/splitplan"
)

// exitDecisionRequired is plan-split's exit code when the legacy broker's
// limit needs an operator decision: the plan is printed in full, and a
// script can tell that answer from a failure (1) or a bad command line (2).
const exitDecisionRequired = 3

func newBrokerPlanSplitCmd(a *app) *cobra.Command {
	var instances []string
	var caps []int
	var receiving string
	c := &cobra.Command{
		Use:   "plan-split <legacy-broker> --instances <a,b,...>",
		Short: "Plan the agent caps of the flat instances that replace a legacy Runtime Broker",
		Long: `Plan how a legacy (profile-based) Runtime Broker's agent limit carries over
to the flat Runtime Broker instances that replace it. Nothing is changed: the
command reads the broker's maxAgents and active reservations and the hub-wide
max_agents_per_broker, and prints a cap per instance, a verdict, the reasons
and the flags.

The limit applies per broker ID, so copying the legacy maxAgents to each
instance would multiply the host's aggregate. The rule:

  split                       a positive legacy maxAgents L with L >= n
                              instances: floor(L/n) each, the remainder to
                              the first instance; or --caps, any positive
                              caps (one per instance) summing to at most L.
  operator_decision_required  L < n (no positive cap for every instance), or
                              the legacy broker has no maxAgents of its own
                              and inherits the hub default (each instance
                              would inherit it too: n times the aggregate).
  nothing_needed              L = 0 (unlimited).

A plan is flagged (quotas_not_enforced) when the hub-wide
max_agents_per_broker is 0, so an instance without its own cap is unlimited;
and (receiving_instance_below_reservations) when the receiving instance, the
one that takes over the legacy broker's agents (--receiving, default the
first), would get fewer slots than the legacy broker's active reservations.

Exit status: 0 for split and nothing_needed (flagged or not), 3 when an
operator decision is required (the plan is still printed), 1 on an error, 2
on a bad command line (including --caps that break the rule).`,
		Example: `  # Split a legacy limit of 10 across three instances: 4, 3, 3
  scion runtime-broker plan-split old-box --instances local-docker,k8s-batch,k8s-gpu

  # Choose the caps, and name the instance that takes over the agents
  scion runtime-broker plan-split old-box --instances local-docker,k8s-batch --caps 2,8 --receiving k8s-batch

  # The plan as JSON
  scion runtime-broker plan-split old-box --instances a,b -o json`,
		Args: exactArgs("legacy-broker"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(instances) == 0 {
				return usageErrorf("--instances is required: name the flat instances that replace %s, comma-separated", args[0])
			}
			for _, n := range instances {
				if err := validateName("instance", n); err != nil {
					return err
				}
			}
			if receiving != "" {
				if err := validateName("--receiving instance", receiving); err != nil {
					return err
				}
			}
			_, cl, err := a.connect()
			if err != nil {
				return err
			}
			b, err := cl.GetBroker(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if b.RuntimeTarget != nil {
				return fmt.Errorf("runtime broker %s is already a flat Runtime Broker (runtime target %s): only a legacy broker is split", b.Name, b.RuntimeTarget)
			}
			lim, err := cl.GetLimits(cmd.Context())
			if err != nil {
				return err
			}
			in := splitplan.Input{
				LegacyMaxAgents: b.Settings.MaxAgents,
				HubMaxAgents:    lim.MaxAgentsPerBroker,
				// The Hub has no switch of its own for quotas: a
				// max_agents_per_broker of 0 leaves every broker without
				// its own maxAgents unlimited, which is what an instance
				// is until its cap is set.
				QuotasEnforced: lim.MaxAgentsPerBroker > 0,
				// Every running agent holds one slot (RunningAgents is
				// the broker's reservation count).
				ActiveReservations: b.RunningAgents,
				Instances:          instances,
				Receiving:          receiving,
			}
			if cmd.Flags().Changed("caps") {
				in.Caps = caps
				if in.Caps == nil {
					in.Caps = []int{}
				}
			}
			p, err := splitplan.Make(in)
			if err != nil {
				return usageErr(err)
			}
			v := splitView{Plan: p, HubMaxAgentsPerBroker: lim.MaxAgentsPerBroker, QuotasEnforced: in.QuotasEnforced,
				LegacyBroker: legacyView{ID: b.ID, Name: b.Name, MaxAgents: b.Settings.MaxAgents, ActiveReservations: b.RunningAgents}}
			if a.json() {
				err = a.render(cmd.OutOrStdout(), v)
			} else {
				err = printSplit(cmd.OutOrStdout(), v)
			}
			if err == nil && p.Verdict == splitplan.OperatorDecisionRequired {
				err = &exitCodeError{exitDecisionRequired}
			}
			return err
		},
	}
	c.Flags().StringSliceVar(&instances, "instances", nil, "the flat instances' names, comma-separated, in order (required; the first gets a default split's remainder)")
	c.Flags().IntSliceVar(&caps, "caps", nil, "the operator's caps, one per instance in the same order: each positive, summing to at most the legacy maxAgents")
	c.Flags().StringVar(&receiving, "receiving", "", "the instance that takes over the legacy broker's agents (default: the first)")
	return c
}

// splitView is what plan-split prints with -o json: the plan and what it
// was computed from.
type splitView struct {
	LegacyBroker          legacyView `json:"legacyBroker"`
	HubMaxAgentsPerBroker int        `json:"hubMaxAgentsPerBroker"`
	QuotasEnforced        bool       `json:"quotasEnforced"`
	splitplan.Plan
}

type legacyView struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// MaxAgents is the broker's own setting: null when it inherits.
	MaxAgents          *int `json:"maxAgents"`
	ActiveReservations int  `json:"activeReservations"`
}

func printSplit(w io.Writer, v splitView) error {
	own := "none (inherits)"
	if m := v.LegacyBroker.MaxAgents; m != nil {
		own = show.LimitText(*m)
	}
	if err := show.KeyValues(w,
		"legacy broker", fmt.Sprintf("%s (%s)", v.LegacyBroker.Name, v.LegacyBroker.ID),
		"legacy maxAgents", own,
		"active reservations", fmt.Sprint(v.LegacyBroker.ActiveReservations),
		"hub max_agents_per_broker", show.LimitText(v.HubMaxAgentsPerBroker),
		"verdict", string(v.Verdict)); err != nil {
		return err
	}
	fmt.Fprintln(w)
	t := show.NewTable(w, "INSTANCE", "MAX AGENTS", "RECEIVING")
	for _, inst := range v.Instances {
		c := "-"
		if inst.MaxAgents != nil {
			c = fmt.Sprint(*inst.MaxAgents)
		}
		t.Row(inst.Name, c, show.YesNo(inst.Receiving))
	}
	if err := t.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	for _, r := range v.Reasons {
		fmt.Fprintf(w, "Reason: %s.\n", r)
	}
	for _, f := range v.Flags {
		fmt.Fprintf(w, "Flagged %s: %s.\n", f.Code, f.Message)
	}
	switch v.Verdict {
	case splitplan.Split:
		fmt.Fprintln(w, "Set each instance's maxAgents to its cap before its agents move to it.")
	case splitplan.NothingNeeded:
		fmt.Fprintln(w, "No instance needs a cap to keep the legacy broker's aggregate.")
	}
	return nil
}
