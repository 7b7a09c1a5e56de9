package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/cli/show"
	"github.com/scion-go/scion/client"
)

var brokerHeaders = []string{"NAME", "ID", "STATUS", "TARGET", "RUNNING", "LIMIT", "AUTO-PROVIDE", "PROJECTS"}

func brokerRow(b api.RuntimeBroker) []string {
	return []string{b.Name, b.ID, show.OrDash(b.Status), targetText(b.RuntimeTarget), fmt.Sprint(b.RunningAgents), show.LimitText(b.EffectiveMaxAgents),
		show.YesNo(b.AutoProvide), fmt.Sprint(len(b.Projects))}
}

// watchBrokers prints the brokers, then each broker whose row changed
// (online, offline, its running count, ...) as the feed tells it.
func (a *app) watchBrokers(cmd *cobra.Command, f *feed, bs []api.RuntimeBroker) error {
	out := cmd.OutOrStdout()
	last := map[string]string{}
	var rows [][]string
	for _, b := range bs {
		rows = append(rows, brokerRow(b))
	}
	wr := newWatchRows(out, brokerHeaders, rows)
	emit := func(b api.RuntimeBroker) error {
		r := brokerRow(b)
		last[b.ID] = strings.Join(r, "\x00")
		if a.json() {
			return a.renderLine(out, b)
		}
		wr.print(r)
		return nil
	}
	if !a.json() {
		wr.print(brokerHeaders)
	}
	for _, b := range bs {
		if err := emit(b); err != nil {
			return err
		}
	}
	return f.watch(func(ev client.Event) error {
		if ev.Name != client.EventBrokers {
			return nil
		}
		var now []api.RuntimeBroker
		if json.Unmarshal(ev.Data, &now) != nil {
			return nil
		}
		for _, b := range now {
			if last[b.ID] != strings.Join(brokerRow(b), "\x00") {
				if err := emit(b); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

func newHubBrokersCmd(a *app) *cobra.Command {
	var watchFlag bool
	c := &cobra.Command{
		Use:   "brokers",
		Short: "List the Hub's Runtime Brokers and their availability",
		Long: `List every Runtime Broker registered with the Hub: whether it is online, the
one runtime target a flat Runtime Broker serves (TARGET: docker, or
kubernetes:<context>/<namespace>; "-" for a broker with profiles), how
many agents it runs against its limit (0 = unlimited), whether it provides
new projects automatically, and how many projects it provides.`,
		Example: `  scion hub brokers
  scion hub brokers -o json
  scion hub brokers join-token create --name gpu-box --ttl 30m`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, cl, err := a.connect()
			if err != nil {
				return err
			}
			var f *feed
			if watchFlag {
				if f, err = openFeed(cmd, cl); err != nil {
					return err
				}
			}
			bs, err := cl.ListAllBrokers(cmd.Context())
			if err != nil {
				if f != nil {
					f.stop()
				}
				return err
			}
			if f != nil {
				return a.watchBrokers(cmd, f, bs)
			}
			if a.json() {
				return a.render(cmd.OutOrStdout(), bs)
			}
			t := show.NewTable(cmd.OutOrStdout(), brokerHeaders...)
			for _, b := range bs {
				t.Row(brokerRow(b)...)
			}
			return t.Flush()
		},
	}
	c.Flags().BoolVarP(&watchFlag, "watch", "w", false, watchHelp)
	jt := groupCmd(&cobra.Command{Use: "join-token", Short: "Create one-time tokens for 'scion runtime-broker join'"})
	jt.AddCommand(newJoinTokenCreateCmd(a))
	c.AddCommand(jt, newHubBrokersSetCmd(a))
	return c
}

// targetText is a flat broker's runtime target as the CLI shows it, "-"
// for a broker that serves profiles.
func targetText(t *api.RuntimeTarget) string {
	if t == nil {
		return "-"
	}
	return t.String()
}

func newJoinTokenCreateCmd(a *app) *cobra.Command {
	var name string
	var ttl time.Duration
	c := &cobra.Command{
		Use:   "create",
		Short: "Create a one-time join token (admin); it is shown only once",
		Long: `Create a one-time token that lets a machine register as a Runtime Broker
without signing in: run 'scion runtime-broker join --token <token>' there.
The Hub does not show the token again.`,
		Example: `  scion hub brokers join-token create --name gpu-box --ttl 30m`,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if ttl < 0 {
				return usageErrorf("invalid --ttl %s: must be positive", ttl)
			}
			if name != "" {
				if err := validateName("broker", name); err != nil {
					return err
				}
			}
			_, cl, err := a.connect()
			if err != nil {
				return err
			}
			req := api.CreateJoinTokenRequest{Name: name}
			if ttl > 0 {
				req.TTL = ttl.String()
			}
			tok, err := cl.CreateJoinToken(cmd.Context(), req)
			if err != nil {
				return err
			}
			if a.json() {
				return a.render(cmd.OutOrStdout(), tok)
			}
			// The token alone goes to stdout so that it can be captured;
			// the explanation goes to stderr.
			fmt.Fprintln(cmd.OutOrStdout(), tok.Token)
			fmt.Fprintf(cmd.ErrOrStderr(), "This token is shown only once; it expires %s.\nOn the broker machine run: scion runtime-broker join --token <token>\n",
				tok.ExpiresAt.Local().Format(time.RFC3339))
			return nil
		},
	}
	c.Flags().StringVar(&name, "name", "", "broker name the token is meant for")
	c.Flags().DurationVar(&ttl, "ttl", 0, "how long the token is valid (default: the Hub's, 1h)")
	return c
}

func newHubSettingsCmd(a *app) *cobra.Command {
	c := groupCmd(&cobra.Command{Use: "settings", Short: "Show or change hub-wide agent defaults and experiments"})
	get := &cobra.Command{
		Use:   "get",
		Short: "Show the hub-wide agent defaults and which experiments are on",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, cl, err := a.connect()
			if err != nil {
				return err
			}
			s, err := cl.GetSettings(cmd.Context())
			if err != nil {
				return err
			}
			return a.printSettings(cmd, s)
		},
	}
	var broker, harness, image string
	var experiments []string
	set := &cobra.Command{
		Use:   "set",
		Short: "Change hub-wide agent defaults or turn experiments on and off (admin)",
		Long: `Change hub-wide agent defaults; only the flags given are changed, and an
empty value clears a default. Only those are sent to the Hub, conditional on
the settings' version read just before (If-Match): when another admin writes
in between, the Hub answers 412 and set reads again and resends, up to 3
times, so both changes are kept. The default Runtime Broker is used for
projects without a default broker of their own (see 'Broker Selection').

--experiment <name>=on|off turns a Hub experiment on or off (true and false
work too); repeat it for several. Experiments are off until turned on;
'scion hub settings get' lists the ones this Hub knows. The
hub.flat_runtime_brokers experiment lets flat Runtime Broker instances
(server.broker.instances) register.`,
		Example: `  scion hub settings set --default-runtime-broker my-cloud-vm
  scion hub settings set --default-runtime-broker ""
  scion hub settings set --experiment hub.flat_runtime_brokers=on
  scion hub settings set --experiment hub.flat_runtime_brokers=off -o json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			f := cmd.Flags()
			if !f.Changed("default-runtime-broker") && !f.Changed("default-harness") && !f.Changed("default-image") && !f.Changed("experiment") {
				return usageErrorf("nothing to set: pass --default-runtime-broker, --default-harness, --default-image or --experiment <name>=on|off")
			}
			if err := validateHarnessFlag("default-harness", harness); err != nil {
				return err
			}
			switches, err := parseExperiments(experiments)
			if err != nil {
				return err
			}
			_, cl, err := a.connect()
			if err != nil {
				return err
			}
			u := api.HubSettingsUpdate{Experiments: switches}
			if f.Changed("default-runtime-broker") || f.Changed("default-harness") || f.Changed("default-image") {
				u.AgentDefaults = &api.AgentDefaultsUpdate{}
			}
			if f.Changed("default-runtime-broker") {
				u.AgentDefaults.DefaultRuntimeBroker = &broker
			}
			if f.Changed("default-harness") {
				u.AgentDefaults.DefaultHarness = &harness
			}
			if f.Changed("default-image") {
				u.AgentDefaults.DefaultImage = &image
			}
			s, err := updateSettings(cmd.Context(), cl, u)
			if err != nil {
				return err
			}
			return a.printSettings(cmd, s)
		},
	}
	set.Flags().StringVar(&broker, "default-runtime-broker", "", "default Runtime Broker (name or ID; empty clears)")
	set.Flags().StringVar(&harness, "default-harness", "", "default harness for new agents")
	set.Flags().StringVar(&image, "default-image", "", "default image for new agents")
	set.Flags().StringArrayVar(&experiments, "experiment", nil, "turn a Hub experiment on or off: <name>=on|off (repeatable), e.g. "+api.ExperimentFlatRuntimeBrokers+"=on")
	c.AddCommand(get, set)
	return c
}

// settingsAttempts bounds updateSettings' retries after a 412.
const settingsAttempts = 3

// updateSettings sends only what the user set (a partial update, so an
// admin changing another setting at the same time keeps it), conditional
// on the version it read (If-Match). Another write in between answers
// 412; since the update names only the user's own changes, it is read
// and sent again, up to settingsAttempts times, and then reported.
func updateSettings(ctx context.Context, cl *client.Client, u api.HubSettingsUpdate) (*api.HubSettings, error) {
	// The Hub's own rule for the defaults, before a round trip. The
	// experiment names are the Hub's to know: a newer Hub has more.
	if err := validateInput(u.AgentDefaults.Validate()); err != nil {
		return nil, err
	}
	var err error
	for range settingsAttempts {
		var etag string
		if _, etag, err = cl.GetSettingsETag(ctx); err != nil {
			return nil, err
		}
		var s *api.HubSettings
		s, _, err = cl.UpdateSettings(ctx, u, etag)
		if !api.IsCode(err, api.CodePreconditionFailed) {
			return s, err
		}
	}
	// The Hub's 412, saying what happened to this command.
	var ae *api.Error
	if !errors.As(err, &ae) {
		return nil, err
	}
	n := *ae
	n.Message = fmt.Sprintf("the Hub settings were changed by someone else %d times while this change was sent; it changed nothing: run it again", settingsAttempts)
	return nil, &n
}

// parseExperiments reads --experiment values, <name>=on|off|true|false.
// The names are the Hub's to check: it refuses one it does not know and
// lists those it does.
func parseExperiments(vals []string) (map[string]bool, error) {
	out := map[string]bool{}
	for _, v := range vals {
		name, val, ok := strings.Cut(v, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return nil, usageErrorf("invalid --experiment %q: use <name>=on or <name>=off (experiments: %s)", v, api.ExperimentList())
		}
		switch strings.ToLower(strings.TrimSpace(val)) {
		case "on", "true":
			out[name] = true
		case "off", "false":
			out[name] = false
		default:
			return nil, usageErrorf("invalid --experiment %q: the value is on, off, true or false", v)
		}
	}
	return out, nil
}

func (a *app) printSettings(cmd *cobra.Command, s *api.HubSettings) error {
	if a.json() {
		return a.render(cmd.OutOrStdout(), s)
	}
	w := cmd.OutOrStdout()
	d := s.AgentDefaults
	if err := show.KeyValues(w,
		"default_runtime_broker", d.DefaultRuntimeBroker,
		"default_harness", d.DefaultHarness,
		"default_image", d.DefaultImage); err != nil {
		return err
	}
	// The known experiments first, in the order the Hub lists them, then
	// any other the Hub reports (a newer Hub's).
	names := slices.Clone(api.Experiments)
	for _, n := range slices.Sorted(maps.Keys(s.Experiments)) {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	fmt.Fprintln(w, "experiments:")
	var kv []string
	for _, n := range names {
		kv = append(kv, "  "+n, onOff(s.Experiments[n]))
	}
	return show.KeyValues(w, kv...)
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

func newHubLimitsCmd(a *app) *cobra.Command {
	c := groupCmd(&cobra.Command{Use: "limits", Short: "Show or change hub-wide limits"})
	get := &cobra.Command{
		Use:   "get",
		Short: "Show the hub-wide limits",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, cl, err := a.connect()
			if err != nil {
				return err
			}
			l, err := cl.GetLimits(cmd.Context())
			if err != nil {
				return err
			}
			return a.printLimits(cmd, l)
		},
	}
	var maxAgents int
	set := &cobra.Command{
		Use:   "set",
		Short: "Change hub-wide limits (admin)",
		Long: `Change the hub-wide max_agents_per_broker: how many agents may run on each
Runtime Broker unless the broker's own settings override it (0 = unlimited).`,
		Example: `  scion hub limits set --max-agents-per-broker 20`,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("max-agents-per-broker") {
				return usageErrorf("nothing to set: pass --max-agents-per-broker N")
			}
			if maxAgents < 0 {
				return usageErrorf("invalid --max-agents-per-broker %d: must be 0 (unlimited) or more", maxAgents)
			}
			_, cl, err := a.connect()
			if err != nil {
				return err
			}
			l, err := cl.GetLimits(cmd.Context())
			if err != nil {
				return err
			}
			l.MaxAgentsPerBroker = maxAgents
			if l, err = cl.PutLimits(cmd.Context(), *l); err != nil {
				return err
			}
			return a.printLimits(cmd, l)
		},
	}
	set.Flags().IntVar(&maxAgents, "max-agents-per-broker", 0, "running agents allowed per broker (0 = unlimited)")
	c.AddCommand(get, set)
	return c
}

func (a *app) printLimits(cmd *cobra.Command, l *api.Limits) error {
	if a.json() {
		return a.render(cmd.OutOrStdout(), l)
	}
	return show.KeyValues(cmd.OutOrStdout(), "max_agents_per_broker", show.LimitText(l.MaxAgentsPerBroker))
}
