// Package placement decides which Runtime Broker runs an agent (the
// broker selection cascade of the multi-broker spec) and what capacity
// limit applies to a broker. Everything here is a pure function over plain
// values: the Hub loads the inputs, calls Select, then persists the
// decision (with its capacity reservation) in one transaction.
package placement

import (
	"sort"

	"github.com/scion-go/scion/api"
)

// Broker is what the cascade needs to know about one broker.
type Broker struct {
	ID     string
	Name   string
	Online bool
	// Provider: the broker provides for the agent's project.
	Provider bool
	// Dispatchable: the caller may dispatch to it (broker.dispatch, or the
	// broker has AutoProvide on).
	Dispatchable bool
}

// Input is one placement question.
type Input struct {
	Project string // project name, for messages
	// Explicit is the --broker value (name or ID), if any.
	Explicit string
	// ProjectDefault is the project's default broker ID, if set.
	ProjectDefault string
	// HubDefault is Agent Defaults' default_runtime_broker (name or ID).
	HubDefault string
	// Brokers are all brokers the caller can see.
	Brokers []Broker
	// CanUpdateProject: the caller has update access to the project, which
	// auto-linking an explicit non-provider broker needs.
	CanUpdateProject bool
}

// Sources of a decision, in cascade order.
const (
	SourceExplicit       = "explicit"
	SourceProjectDefault = "project_default"
	SourceHubDefault     = "hub_default"
	SourceSingleProvider = "single_provider"
)

// Decision is the chosen broker.
type Decision struct {
	BrokerID string
	Source   string
	// AutoLink: the broker must be linked as a provider of the project.
	AutoLink bool
}

func find(bs []Broker, ref string) *Broker {
	for i := range bs {
		if bs[i].ID == ref {
			return &bs[i]
		}
	}
	for i := range bs {
		if bs[i].Name == ref {
			return &bs[i]
		}
	}
	return nil
}

// Select runs the cascade: explicit --broker, the project's default
// broker, the Hub-level default, the single online provider, else an error
// that says what to do.
func Select(in Input) (Decision, *api.Error) {
	// 1. Explicit --broker.
	if in.Explicit != "" {
		b := find(in.Brokers, in.Explicit)
		if b == nil {
			return Decision{}, api.NotFound(api.CodeBrokerNotFound, "runtime broker %q not found", in.Explicit)
		}
		d := Decision{BrokerID: b.ID, Source: SourceExplicit}
		if !b.Provider {
			if !in.CanUpdateProject {
				return Decision{}, notProvider(b, in.Project, "")
			}
			d.AutoLink = true
		}
		if !b.Online {
			return Decision{}, offline(b, "the requested runtime broker")
		}
		return d, nil
	}
	// 2. The project's default broker: must be online. A default that is
	// not among in.Brokers (deregistered, or one the caller cannot see) is
	// treated as no default at all: answering differently for an
	// invisible broker would tell the caller it exists. One that does not
	// provide for the project is linked as level 1 links, only for a
	// caller with update access to the project (refused as level 1
	// refuses).
	var projectDefault *Broker
	if in.ProjectDefault != "" {
		projectDefault = find(in.Brokers, in.ProjectDefault)
	}
	if b := projectDefault; b != nil {
		if !b.Provider && !in.CanUpdateProject {
			return Decision{}, notProvider(b, in.Project, "the project's default ")
		}
		if !b.Online {
			e := offline(b, "the project's default runtime broker")
			e.Code = api.CodeDefaultBrokerOffline
			return Decision{}, e
		}
		return Decision{BrokerID: b.ID, Source: SourceProjectDefault, AutoLink: !b.Provider}, nil
	}
	// 3. The Hub-level default, used when the project has no (usable)
	// default: must be a provider, online and dispatchable, else the
	// cascade goes on.
	var hubDefaultWhy string
	if in.HubDefault != "" {
		b := find(in.Brokers, in.HubDefault)
		switch {
		case b == nil:
			hubDefaultWhy = "not found"
		case !b.Provider:
			hubDefaultWhy = "not a provider for the project"
		case !b.Online:
			hubDefaultWhy = "offline"
		case !b.Dispatchable:
			hubDefaultWhy = "not dispatchable for you"
		default:
			return Decision{BrokerID: b.ID, Source: SourceHubDefault}, nil
		}
	}
	// 4. Exactly one provider, online.
	var providers, online []Broker
	for _, b := range in.Brokers {
		if b.Provider {
			providers = append(providers, b)
			if b.Online {
				online = append(online, b)
			}
		}
	}
	if len(providers) == 1 {
		if !providers[0].Online {
			return Decision{}, offline(&providers[0], "the project's only runtime broker")
		}
		return Decision{BrokerID: providers[0].ID, Source: SourceSingleProvider}, nil
	}
	// 5. Errors.
	if len(providers) == 0 {
		e := api.Errorf(api.CodeNoBroker,
			"project %q has no runtime broker; run `scion runtime-broker provide --project %s` on a broker, or pass --broker", in.Project, in.Project)
		if hubDefaultWhy != "" {
			e = e.WithDetail("hubDefault", hubDefaultWhy)
		}
		return Decision{}, e
	}
	if len(online) == 0 {
		return Decision{}, api.Errorf(api.CodeBrokerOffline,
			"every runtime broker of project %q is offline", in.Project).WithDetail("brokers", sortedNames(providers))
	}
	// The choices are the brokers a --broker could succeed on: an offline
	// one would only be refused as offline.
	e := api.Errorf(api.CodeMultipleBrokers,
		"project %q has several runtime brokers; choose one with --broker, or set the project's default broker", in.Project).
		WithDetail("brokers", sortedNames(online))
	if hubDefaultWhy != "" {
		e = e.WithDetail("hubDefault", hubDefaultWhy)
	}
	return Decision{}, e
}

func sortedNames(bs []Broker) []string {
	names := make([]string, 0, len(bs))
	for _, b := range bs {
		names = append(names, b.Name)
	}
	sort.Strings(names)
	return names
}

// notProvider refuses a broker that does not provide for the project to
// a caller who may not link it (403 at levels 1 and 2 alike).
func notProvider(b *Broker, project, which string) *api.Error {
	return api.Errorf(api.CodeBrokerNotProvider,
		"%sruntime broker %q does not provide for project %q, and linking it needs update access to the project; ask a project owner to run `scion runtime-broker provide --project %s` on it", which, b.Name, project, project).
		WithDetail("broker", b.Name)
}

func offline(b *Broker, what string) *api.Error {
	return api.Errorf(api.CodeBrokerOffline,
		"%s %q is offline; start it (`scion runtime-broker start`) or choose another with --broker", what, b.Name).
		WithDetail("broker", b.Name)
}

// EffectiveLimit is the running-agent cap of a broker: its own maxAgents
// when set (0 = unlimited), else the hub-wide max_agents_per_broker.
func EffectiveLimit(brokerMax *int, hubMax int) int {
	if brokerMax != nil {
		return *brokerMax
	}
	return hubMax
}
