package cli

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/cli/show"
	"github.com/scion-go/scion/client"
)

// describeEvents is how many recent events describe shows.
const describeEvents = 20

// describeEvent is one line of a describe's events: what the Hub's
// records say happened, when. They are read from the records themselves
// (creation, generations, moves, Jobs, the last change), not from a log
// of their own.
type describeEvent struct {
	At      time.Time `json:"at"`
	What    string    `json:"what"`
	Message string    `json:"message,omitempty"`
}

// agentDescription is 'scion describe agent -o json'.
type agentDescription struct {
	Agent  api.Agent       `json:"agent"`
	Events []describeEvent `json:"events"`
}

type brokerDescription struct {
	Broker api.RuntimeBroker `json:"broker"`
	// Agents counts its agents by phase.
	Agents map[string]int  `json:"agents"`
	Events []describeEvent `json:"events"`
}

type projectDescription struct {
	Project api.Project     `json:"project"`
	Agents  map[string]int  `json:"agents"`
	Events  []describeEvent `json:"events"`
}

func newDescribeCmd(a *app) *cobra.Command {
	c := groupCmd(&cobra.Command{
		Use:   "describe",
		Short: "Show an agent, broker or project in full, with its recent events",
	})
	var project string
	ag := &cobra.Command{
		Use:   "agent <name>",
		Short: "An agent: its record, where it runs, and what happened to it lately",
		Long: `Show an agent's record in full and its recent events: its creation, each
generation's start, its moves, its delegated Jobs and its last change, read
from the Hub's records, newest last.`,
		Example: `  scion describe agent fixer --project web`,
		Args:    exactArgs("name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, cl, err := a.connect()
			if err != nil {
				return err
			}
			p := projectOrDefault(project)
			d, err := describeAgent(cmd.Context(), cl, args[0], p)
			if err != nil {
				return err
			}
			if a.json() {
				return a.render(cmd.OutOrStdout(), d)
			}
			return printAgentDescription(cmd.OutOrStdout(), d, p)
		},
	}
	projectFlag(ag, &project)
	completeArgs(ag, a.completeAgents)
	br := &cobra.Command{
		Use:     "broker <name>",
		Short:   "A Runtime Broker: its record, its agents by phase, its recent events",
		Example: `  scion describe broker gpu-1`,
		Args:    exactArgs("name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, cl, err := a.connect()
			if err != nil {
				return err
			}
			b, err := cl.GetBroker(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			ags, err := cl.ListAllAgents(cmd.Context(), client.AgentFilter{Broker: b.ID})
			if err != nil && !api.IsCode(err, api.CodeForbidden) {
				return err
			}
			d := brokerDescription{Broker: *b, Agents: byPhase(ags), Events: brokerEvents(b, ags)}
			if a.json() {
				return a.render(cmd.OutOrStdout(), d)
			}
			return printBrokerDescription(cmd.OutOrStdout(), d)
		},
	}
	completeArgs(br, a.completeBrokers)
	pr := &cobra.Command{
		Use:     "project <name>",
		Short:   "A project: its settings, providers, agents by phase, recent events",
		Example: `  scion describe project web`,
		Args:    exactArgs("name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, cl, err := a.connect()
			if err != nil {
				return err
			}
			p, err := cl.GetProject(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			ags, err := cl.ListAllAgents(cmd.Context(), client.AgentFilter{Project: p.ID})
			if err != nil && !api.IsCode(err, api.CodeForbidden) {
				return err
			}
			d := projectDescription{Project: *p, Agents: byPhase(ags), Events: projectEvents(p, ags)}
			if a.json() {
				return a.render(cmd.OutOrStdout(), d)
			}
			return printProjectDescription(cmd.OutOrStdout(), d)
		},
	}
	completeArgs(pr, a.completeProjects)
	c.AddCommand(ag, br, pr)
	return c
}

func describeAgent(ctx context.Context, cl *client.Client, name, project string) (agentDescription, error) {
	ag, err := cl.GetAgent(ctx, name, project)
	if err != nil {
		return agentDescription{}, err
	}
	evs := []describeEvent{{At: ag.CreatedAt, What: "created", Message: "on runtime broker " + show.OrDash(ag.BrokerName)}}
	for _, g := range ag.Generations {
		evs = append(evs, describeEvent{At: g.StartedAt, What: fmt.Sprintf("generation %d", g.Number), Message: g.Reason})
	}
	// Moves and Jobs are best effort: a caller may read the agent and not
	// its Jobs (a viewer), and the agent's page still describes.
	if ms, err := cl.AgentMoves(ctx, ag.ID, ""); err == nil {
		for _, m := range ms {
			evs = append(evs, describeEvent{At: m.CreatedAt, What: "move started", Message: m.Source + " -> " + m.Target})
			if m.Outcome != "" {
				evs = append(evs, describeEvent{At: m.UpdatedAt, What: "move " + m.Outcome, Message: m.Message})
			}
		}
	}
	if js, err := cl.ListAgentJobs(ctx, ag.ID, "", "", 50); err == nil {
		for _, j := range js.Items {
			evs = append(evs, describeEvent{At: j.CreatedAt, What: "job " + j.ID, Message: "on " + j.Cluster + ": " + string(j.State)})
		}
	}
	evs = append(evs, describeEvent{At: ag.UpdatedAt, What: "last change", Message: ag.Phase + statusSuffix(ag.StatusMessage)})
	return agentDescription{Agent: *ag, Events: recent(evs)}, nil
}

func statusSuffix(msg string) string {
	if msg == "" {
		return ""
	}
	return ": " + msg
}

func brokerEvents(b *api.RuntimeBroker, ags []api.Agent) []describeEvent {
	evs := []describeEvent{{At: b.CreatedAt, What: "registered"}}
	if b.LastSeen != nil {
		evs = append(evs, describeEvent{At: *b.LastSeen, What: "last seen", Message: b.Status})
	}
	for _, a := range ags {
		evs = append(evs, describeEvent{At: a.CreatedAt, What: "agent " + a.Slug + " created"})
	}
	return recent(evs)
}

func projectEvents(p *api.Project, ags []api.Agent) []describeEvent {
	evs := []describeEvent{{At: p.CreatedAt, What: "created"}}
	if !p.UpdatedAt.Equal(p.CreatedAt) {
		evs = append(evs, describeEvent{At: p.UpdatedAt, What: "settings changed"})
	}
	for _, a := range ags {
		evs = append(evs, describeEvent{At: a.CreatedAt, What: "agent " + a.Slug + " created", Message: "on " + show.OrDash(a.BrokerName)})
	}
	return recent(evs)
}

// recent sorts evs oldest first and keeps the last describeEvents.
func recent(evs []describeEvent) []describeEvent {
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].At.Before(evs[j].At) })
	if len(evs) > describeEvents {
		evs = evs[len(evs)-describeEvents:]
	}
	return evs
}

func byPhase(ags []api.Agent) map[string]int {
	m := map[string]int{}
	for _, a := range ags {
		m[a.Phase]++
	}
	return m
}

func phaseCounts(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%d %s", m[k], k)
	}
	return strings.Join(parts, ", ")
}

func printEvents(w io.Writer, evs []describeEvent) error {
	fmt.Fprintln(w, "\nEvents:")
	t := show.NewTable(w, "  AGE", "WHAT", "MESSAGE")
	for _, e := range evs {
		t.Row("  "+show.Age(e.At), e.What, show.OrDash(e.Message))
	}
	return t.Flush()
}

func printAgentDescription(w io.Writer, d agentDescription, project string) error {
	a := d.Agent
	pin := "-"
	if a.PinnedRuntimeTarget != nil {
		pin = a.PinnedRuntimeTarget.RuntimeTarget.String()
	}
	if err := show.KeyValues(w,
		"Name", a.Slug, "ID", a.ID, "Project", project, "Phase", a.Phase, "Container", show.OrDash(a.ContainerStatus),
		"Status message", show.OrDash(a.StatusMessage), "Broker", show.OrDash(firstNonEmpty(a.BrokerName, a.BrokerID)),
		"Profile", show.OrDash(a.Profile), "Pin", pin, "Harness", a.Harness, "Image", show.OrDash(a.Image),
		"Command", show.OrDash(strings.Join(a.Command, " ")), "Generation", fmt.Sprint(a.Generation),
		"Ports", show.OrDash(portsCell(a.Ports)), "Created", a.CreatedAt.Format(time.RFC3339)); err != nil {
		return err
	}
	return printEvents(w, d.Events)
}

func printBrokerDescription(w io.Writer, d brokerDescription) error {
	b := d.Broker
	lastSeen := "-"
	if b.LastSeen != nil {
		lastSeen = b.LastSeen.Format(time.RFC3339)
	}
	profiles := make([]string, len(b.Profiles))
	for i, p := range b.Profiles {
		profiles[i] = p.Name
	}
	if err := show.KeyValues(w,
		"Name", b.Name, "ID", b.ID, "Status", b.Status, "Last seen", lastSeen, "Version", show.OrDash(b.Version),
		"Runtime", show.OrDash(b.Runtime), "Runtime target", targetText(b.RuntimeTarget),
		"Profiles", show.OrDash(strings.Join(profiles, ", ")), "Running / limit", fmt.Sprintf("%d / %s", b.RunningAgents, show.LimitText(b.EffectiveMaxAgents)),
		"Auto-provide", show.YesNo(b.AutoProvide), "Projects", fmt.Sprint(len(b.Projects)), "Agents", phaseCounts(d.Agents)); err != nil {
		return err
	}
	return printEvents(w, d.Events)
}

func printProjectDescription(w io.Writer, d projectDescription) error {
	p := d.Project
	if err := show.KeyValues(w,
		"Name", p.Name, "ID", p.ID, "Sharing mode", p.SharingMode, "Git remote", show.OrDash(p.GitRemote),
		"Default broker", show.OrDash(p.DefaultBrokerID), "Active profile", show.OrDash(p.ActiveProfile),
		"Providers", fmt.Sprint(len(p.Providers)), "Agents", phaseCounts(d.Agents)); err != nil {
		return err
	}
	return printEvents(w, d.Events)
}
