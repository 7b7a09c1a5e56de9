package hub_test

import (
	"context"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/client"
	"github.com/scion-go/scion/internal/testenv"
	"github.com/scion-go/scion/internal/testenv/gitrepo"
	"github.com/scion-go/scion/wire"
)

// TestBrokersReportTheirExport: two brokers whose workspace exports are
// one directory, bind-mounted at a mount point of each, report the same
// export identity in their hellos, and the Hub keeps it on their records;
// a broker without an export reports local storage. An agent's broker
// tells the Hub where it started the workspace: a shared-workspace
// checkout on the export, an empty-per-agent one on the local disk.
func TestBrokersReportTheirExport(t *testing.T) {
	roots, _ := bindExports(t, "b1", "b2")
	repo := gitrepo.New(t)
	e := testenv.New(t, testenv.Options{Brokers: 3, Exports: roots})
	ctx := context.Background()
	var ids []string
	for _, name := range []string{"b1", "b2", "b3"} {
		b, err := e.Store.GetBroker(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		ws := b.WorkspaceStorage
		switch {
		case ws == nil:
			t.Fatalf("broker %s reported no workspace storage", name)
		case name == "b3":
			if ws.Type != "local" || ws.ExportID != "" {
				t.Errorf("broker b3 storage %+v, want local", ws)
			}
		case ws.Type != "nfs" || !ws.Healthy || ws.ExportID == "" || ws.Server != "nfs.test":
			t.Errorf("broker %s storage %+v, want a healthy nfs export with its marker", name, ws)
		default:
			ids = append(ids, ws.ExportID)
		}
	}
	if len(ids) != 2 || ids[0] != ids[1] {
		t.Fatalf("export identities %v, want one for both brokers", ids)
	}

	if _, err := e.Admin.CreateProject(ctx, api.CreateProjectRequest{Name: "shared", GitRemote: repo.URL,
		SharingMode: api.SharingSharedWorkspace, DefaultBroker: "b1"}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, project, broker, want string }{
		{"on-export", "shared", "b1", api.PlacementExport},
		{"local", "default", "b3", api.PlacementLocal},
	} {
		a, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: c.name, Project: c.project, Broker: c.broker, Start: true, Command: []string{"x"}})
		if err != nil {
			t.Fatalf("create %s: %v", c.name, err)
		}
		got, err := e.Store.GetAgent(ctx, a.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.WorkspacePlacement != c.want {
			t.Errorf("agent %s placement %q, want %q", c.name, got.WorkspacePlacement, c.want)
		}
	}
}

// TestMoveSelfBySlugOrID: an agent moving itself is itself however the
// path names it (its ID or its slug): the same table row, the same answer.
func TestMoveSelfBySlugOrID(t *testing.T) {
	e := testenv.New(t, testenv.Options{Brokers: 2, Capabilities: map[string][]string{
		"b1": {wire.CapAgentMove, wire.CapAgentMoveRecreate}, "b2": {wire.CapAgentMove, wire.CapAgentMoveRecreate}}})
	ctx := context.Background()
	a, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "mover", Project: "default", Broker: "b1", Start: true, Command: []string{"x"}})
	if err != nil {
		t.Fatal(err)
	}
	self := client.New(e.URL, agentToken(t, e, a.ID))
	for _, ref := range []string{a.ID, a.Slug} {
		p, err := self.MoveDryRun(ctx, ref, "", api.ReincarnateRequest{Broker: "b2", DryRun: true, Force: true})
		if err != nil || !p.Eligible {
			t.Errorf("the agent moving itself as %q: %+v, %v; want an eligible dry run", ref, p, err)
		}
	}
}
