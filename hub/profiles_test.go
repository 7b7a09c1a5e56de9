package hub_test

import (
	"context"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/testenv"
	"github.com/scion-go/scion/wire"
)

// The profile is -p first, then the project's active profile, then the
// selected broker's default profile; one the broker does not offer is
// refused with a message listing what it offers.
func TestProfileResolution(t *testing.T) {
	e := testenv.New(t, testenv.Options{Brokers: 1, Profiles: map[string][]wire.Profile{
		"b1": {{Name: "docker", Runtime: "docker"}, {Name: "k8s", Runtime: "kubernetes", Default: true}},
	}})
	ctx := context.Background()
	create := func(name, profile string) (*api.Agent, error) {
		return e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: name, Project: "default", Profile: profile, Command: []string{"x"}})
	}
	a, err := create("a1", "")
	if err != nil || a.Profile != "k8s" {
		t.Fatalf("broker default: %q %v", a.Profile, err)
	}
	if _, err := e.Admin.UpdateProject(ctx, "default", api.UpdateProjectRequest{ActiveProfile: ptr("docker")}); err != nil {
		t.Fatal(err)
	}
	a, err = create("a2", "")
	if err != nil || a.Profile != "docker" {
		t.Fatalf("project active profile: %q %v", a.Profile, err)
	}
	a, err = create("a3", "k8s")
	if err != nil || a.Profile != "k8s" {
		t.Fatalf("-p wins: %q %v", a.Profile, err)
	}
	_, err = create("a4", "gpu")
	apiErr(t, err, 409, api.CodeProfileNotAvailable)
	br, err := e.Admin.GetBroker(ctx, e.Brokers()[0].ID)
	if err != nil || len(br.Profiles) != 2 {
		t.Fatalf("broker shows profiles %+v (%v)", br.Profiles, err)
	}
}
