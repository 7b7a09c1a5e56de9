package cli

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/cli/show"
	"github.com/scion-go/scion/client"
)

// newReincarnateCmd is `scion reincarnate`: with --broker, a move of the
// agent to another Runtime Broker. The CLI always sends a dry run first
// and stops if it is refused, so a real request goes only to a Hub that
// knows moves and only for an eligible one.
func newReincarnateCmd(a *app) *cobra.Command {
	var project, handoffFile string
	var noWait bool
	var req api.ReincarnateRequest
	c := &cobra.Command{
		Use:   "reincarnate <agent> [--broker <name|id> [--dry-run] [--force]] [--handoff-file F]",
		Short: "Start an agent's next generation, in place or on another Runtime Broker",
		Long: `Start an agent's next generation: it keeps its ID, slug, generation chain and workspace,
its home is rebuilt from its harness, and its harness session history is not carried
over; it finds the Hub's preamble and your handoff in ~/.scion/handoff.md. Without
--broker it stays on its Runtime Broker (this also records where its workspace is,
which a move needs); --image and --role change it on the way.

With --broker it moves to another Runtime Broker, keeping its ID, slug, generation chain and
workspace. The workspace is never copied: both brokers must mount the same NFS export
(server.workspace_storage), so the target sees the very directory the source used.

The Hub runs its checks in a fixed order and the first failing one refuses the move
before anything changes; --dry-run prints every check, the transfer mode and what the
move keeps, carries, recreates and loses. --force (with --dry-run) previews recreating a
clone-per-agent or empty-per-agent workspace on the target instead.

An eligible move is accepted and runs on the Hub: it stops the agent on the source,
moves its quota, assigns it to the target (linking the target to the project if
needed), provisions it there, starts the new generation with the Hub's preamble and
your handoff (in ~/.scion/handoff.md of the agent's new home), and has the source
remove its local copy. The CLI follows the steps until the move ends (--no-wait
returns at once); a move that fails leaves the agent in the error phase with a
"reincarnation failed: ..." message saying where it is.`,
		Example: `  scion reincarnate fixer --handoff-file handoff.md
  scion reincarnate fixer --broker broker-b --dry-run
  scion reincarnate fixer --broker broker-b --dry-run --force
  scion reincarnate fixer --broker broker-b --handoff-file handoff.md`,
		Args: exactArgs("agent"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := nonEmptyFlag(cmd, "project", "broker"); err != nil {
				return err
			}
			if req.Broker == "" && (req.DryRun || req.Force) {
				return usageErrorf("--dry-run and --force check a move: name the target with --broker")
			}
			if handoffFile != "" {
				b, err := readBounded(handoffFile, api.MaxHandoffLen, "a handoff")
				if err != nil {
					return err
				}
				req.Handoff = string(b)
			}
			if err := req.Validate(); err != nil {
				return err
			}
			p := projectOrDefault(project)
			_, cl, err := a.connect()
			if err != nil {
				return err
			}
			if req.Broker == "" {
				// In place: the next generation on the agent's own broker.
				ag, err := cl.Reincarnate(cmd.Context(), args[0], p, req)
				if err != nil {
					return err
				}
				return a.printAgent(cmd, ag, p)
			}
			dry := req
			dry.DryRun = true
			plan, err := cl.MoveDryRun(cmd.Context(), args[0], p, dry)
			if err != nil {
				if refused := client.MovePlanOf(err); refused != nil && !a.json() {
					show.MovePlan(cmd.OutOrStdout(), refused)
					if refused.Forceable {
						inProject := ""
						if project != "" {
							inProject = " --project " + project
						}
						fmt.Fprintf(cmd.ErrOrStderr(), "This move can be previewed with a recreated workspace: scion reincarnate %s%s --broker %s --dry-run --force\n",
							args[0], inProject, req.Broker)
					}
				}
				return err
			}
			if req.DryRun {
				if a.json() {
					return a.render(cmd.OutOrStdout(), plan)
				}
				show.MovePlan(cmd.OutOrStdout(), plan)
				return nil
			}
			acc, err := cl.Move(cmd.Context(), args[0], p, req)
			if err != nil {
				return err
			}
			if !a.json() {
				show.MovePlan(cmd.OutOrStdout(), &acc.Plan)
				fmt.Fprintf(cmd.OutOrStdout(), "Move %s accepted; it runs on the Hub (Ctrl-C stops following it, not the move).\n", acc.Move.ID)
			}
			if !noWait {
				if acc.Move, err = followMove(cmd, cl, args[0], p, acc.Move, !a.json()); err != nil {
					return err
				}
			}
			if a.json() {
				if err := a.render(cmd.OutOrStdout(), acc); err != nil {
					return err
				}
			}
			if acc.Move.Outcome == api.MoveFailed {
				return api.Errorf(api.CodeConflict, "%s", acc.Move.Message)
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&req.Broker, "broker", "", "the Runtime Broker to move the agent to (name or ID)")
	f.BoolVar(&req.DryRun, "dry-run", false, "run the checks and print the plan without changing anything")
	f.BoolVar(&req.Force, "force", false, "allow recreating the workspace on the target where the export cannot carry it (with --dry-run)")
	f.StringVar(&handoffFile, "handoff-file", "", "a file whose text starts the new generation, after the Hub's preamble")
	f.StringVar(&req.Image, "image", "", "run the new generation with this image (the checks judge it)")
	f.StringVar(&req.Role, "role", "", "change the agent's role (you become its delegator)")
	f.BoolVar(&noWait, "no-wait", false, "answer once the Hub accepts the move, without following its steps")
	projectFlag(c, &project)
	return c
}

// readBounded reads a file of at most max bytes, what (a secret, a
// handoff) saying in the refusal what it may not exceed.
func readBounded(path string, max int, what string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, int64(max)+1))
	if err != nil {
		return nil, err
	}
	if len(b) > max {
		return nil, usageErrorf("%s is larger than %s may be (%d bytes)", path, what, max)
	}
	return b, nil
}

// followLimit bounds how long the CLI follows a move.
const followLimit = 10 * time.Minute

// followMove prints a move's steps as the Hub records them until it ends
// (or the command is cancelled), and returns its last record.
func followMove(cmd *cobra.Command, cl *client.Client, agent, project string, m api.AgentMove, progress bool) (api.AgentMove, error) {
	last := m.Step
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	giveUp := time.After(followLimit)
	for m.Outcome == "" {
		select {
		case <-cmd.Context().Done():
			return m, cmd.Context().Err()
		case <-giveUp:
			return m, api.Errorf(api.CodeBrokerTimeout, "move %s has not ended after %v (last step %s); it goes on on the Hub: 'scion reincarnate' again refuses while it runs", m.ID, followLimit, m.Step)
		case <-tick.C:
		}
		ms, err := cl.AgentMoves(cmd.Context(), agent, project)
		if err != nil {
			return m, err
		}
		for _, x := range ms {
			if x.ID == m.ID {
				m = x
			}
		}
		if progress && m.Step != last {
			fmt.Fprintf(cmd.OutOrStdout(), "  %s\n", m.Step)
			last = m.Step
		}
	}
	if progress {
		fmt.Fprintf(cmd.OutOrStdout(), "Move %s %s.\n", m.Outcome, m.ID)
	}
	return m, nil
}
