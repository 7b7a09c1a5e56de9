package placement

import (
	"testing"

	"github.com/scion-go/scion/api"
)

func TestSelect(t *testing.T) {
	a := Broker{ID: "id-a", Name: "a", Online: true, Provider: true, Dispatchable: true}
	b := Broker{ID: "id-b", Name: "b", Online: true, Provider: true, Dispatchable: true}
	off := Broker{ID: "id-off", Name: "off", Online: false, Provider: true, Dispatchable: true}
	stranger := Broker{ID: "id-s", Name: "s", Online: true, Provider: false, Dispatchable: true}
	nodispatch := Broker{ID: "id-n", Name: "n", Online: true, Provider: true, Dispatchable: false}

	tests := []struct {
		name     string
		in       Input
		want     string // broker ID
		source   string
		autoLink bool
		code     string
	}{
		{"explicit provider by name", Input{Explicit: "a", Brokers: []Broker{a, b}}, "id-a", SourceExplicit, false, ""},
		{"explicit provider by ID", Input{Explicit: "id-b", Brokers: []Broker{a, b}}, "id-b", SourceExplicit, false, ""},
		{"explicit unknown", Input{Explicit: "zz", Brokers: []Broker{a}}, "", "", false, api.CodeBrokerNotFound},
		{"explicit non-provider auto-linked with update access", Input{Explicit: "s", Brokers: []Broker{a, stranger}, CanUpdateProject: true}, "id-s", SourceExplicit, true, ""},
		{"explicit non-provider without update access", Input{Explicit: "s", Brokers: []Broker{a, stranger}}, "", "", false, api.CodeBrokerNotProvider},
		{"explicit offline", Input{Explicit: "off", Brokers: []Broker{a, off}}, "", "", false, api.CodeBrokerOffline},
		{"explicit wins over project default", Input{Explicit: "b", ProjectDefault: "id-a", Brokers: []Broker{a, b}}, "id-b", SourceExplicit, false, ""},
		{"project default online", Input{ProjectDefault: "id-b", HubDefault: "a", Brokers: []Broker{a, b}}, "id-b", SourceProjectDefault, false, ""},
		{"project default not a provider auto-linked with update access", Input{ProjectDefault: "id-s", Brokers: []Broker{a, stranger}, CanUpdateProject: true}, "id-s", SourceProjectDefault, true, ""},
		{"project default not a provider without update access", Input{ProjectDefault: "id-s", Brokers: []Broker{a, stranger}}, "", "", false, api.CodeBrokerNotProvider},
		{"project default provider needs no update access", Input{ProjectDefault: "id-a", Brokers: []Broker{a, stranger}}, "id-a", SourceProjectDefault, false, ""},
		{"project default offline", Input{ProjectDefault: "id-off", Brokers: []Broker{a, off}}, "", "", false, api.CodeDefaultBrokerOffline},
		{"project default deleted falls through to single provider", Input{ProjectDefault: "gone", Brokers: []Broker{a}}, "id-a", SourceSingleProvider, false, ""},
		{"project default deleted: hub default used", Input{ProjectDefault: "gone", HubDefault: "b", Brokers: []Broker{a, b}}, "id-b", SourceHubDefault, false, ""},
		{"project default deleted, no hub default, several providers", Input{ProjectDefault: "gone", Brokers: []Broker{a, b}}, "", "", false, api.CodeMultipleBrokers},
		{"project default deleted, no provider", Input{ProjectDefault: "gone", Brokers: []Broker{stranger}}, "", "", false, api.CodeNoBroker},
		{"hub default used when project has none", Input{HubDefault: "b", Brokers: []Broker{a, b}}, "id-b", SourceHubDefault, false, ""},
		{"hub default ignored when project has a default", Input{ProjectDefault: "id-a", HubDefault: "b", Brokers: []Broker{a, b}}, "id-a", SourceProjectDefault, false, ""},
		{"hub default not a provider falls through", Input{HubDefault: "s", Brokers: []Broker{a, stranger}}, "id-a", SourceSingleProvider, false, ""},
		{"hub default offline falls through", Input{HubDefault: "off", Brokers: []Broker{a, off}}, "", "", false, api.CodeMultipleBrokers},
		{"hub default not dispatchable falls through", Input{HubDefault: "n", Brokers: []Broker{a, nodispatch}}, "", "", false, api.CodeMultipleBrokers},
		{"hub default not dispatchable, single other provider", Input{HubDefault: "n", Brokers: []Broker{nodispatch, stranger}}, "id-n", SourceSingleProvider, false, ""},
		{"single online provider", Input{Brokers: []Broker{a, stranger}}, "id-a", SourceSingleProvider, false, ""},
		{"single provider offline", Input{Brokers: []Broker{off, stranger}}, "", "", false, api.CodeBrokerOffline},
		{"several providers need a choice", Input{Brokers: []Broker{a, b}}, "", "", false, api.CodeMultipleBrokers},
		{"several providers all offline", Input{Brokers: []Broker{off, {ID: "x", Name: "x", Provider: true}}}, "", "", false, api.CodeBrokerOffline},
		{"no provider", Input{Brokers: []Broker{stranger}}, "", "", false, api.CodeNoBroker},
		{"no brokers at all", Input{}, "", "", false, api.CodeNoBroker},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.Project = "p"
			d, err := Select(tc.in)
			if tc.code != "" {
				if err == nil || err.Code != tc.code {
					t.Fatalf("got %+v, %v; want code %s", d, err, tc.code)
				}
				if err.Status == 0 || err.Message == "" {
					t.Fatalf("error lacks status or message: %+v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			if d.BrokerID != tc.want || d.Source != tc.source || d.AutoLink != tc.autoLink {
				t.Fatalf("got %+v; want %s/%s/autolink=%v", d, tc.want, tc.source, tc.autoLink)
			}
		})
	}
}

func TestSeveralProvidersListsThem(t *testing.T) {
	_, err := Select(Input{Project: "p", Brokers: []Broker{
		{ID: "1", Name: "zeta", Online: true, Provider: true},
		{ID: "2", Name: "alpha", Online: true, Provider: true},
	}})
	names, _ := err.Details["brokers"].([]string)
	if len(names) != 2 || names[0] != "alpha" || names[1] != "zeta" {
		t.Fatalf("details = %v", err.Details)
	}
}

// The choices of runtime_broker_selection_required are brokers a --broker
// could succeed on: never an offline one.
func TestSelectionChoicesAreOnline(t *testing.T) {
	_, err := Select(Input{Project: "p", Brokers: []Broker{
		{ID: "1", Name: "zeta", Online: true, Provider: true},
		{ID: "2", Name: "down", Online: false, Provider: true},
		{ID: "3", Name: "alpha", Online: true, Provider: true},
		{ID: "4", Name: "other", Online: true, Provider: false},
	}})
	if err == nil || err.Code != api.CodeMultipleBrokers {
		t.Fatalf("err = %v", err)
	}
	names, _ := err.Details["brokers"].([]string)
	if len(names) != 2 || names[0] != "alpha" || names[1] != "zeta" {
		t.Fatalf("choices = %v; want [alpha zeta]", err.Details["brokers"])
	}
	// Several providers, one online: still a choice (the spec auto-selects
	// only a project's single provider), and the choice is that one.
	_, err = Select(Input{Project: "p", Brokers: []Broker{
		{ID: "1", Name: "up", Online: true, Provider: true},
		{ID: "2", Name: "down", Online: false, Provider: true},
	}})
	if err == nil || err.Code != api.CodeMultipleBrokers {
		t.Fatalf("err = %v", err)
	}
	if names, _ := err.Details["brokers"].([]string); len(names) != 1 || names[0] != "up" {
		t.Fatalf("choices = %v; want [up]", err.Details["brokers"])
	}
}

func TestEffectiveLimit(t *testing.T) {
	zero, five := 0, 5
	for _, tc := range []struct {
		own  *int
		hub  int
		want int
	}{{nil, 100, 100}, {&zero, 100, 0}, {&five, 100, 5}, {&five, 2, 5}} {
		if got := EffectiveLimit(tc.own, tc.hub); got != tc.want {
			t.Errorf("EffectiveLimit(%v,%d)=%d want %d", tc.own, tc.hub, got, tc.want)
		}
	}
}
