package hub_test

import (
	"context"
	"testing"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/testenv"
)

// A project's git remote is one of the allowed transports, on create and
// on update; a refused one stores nothing.
func TestProjectGitRemoteTransport(t *testing.T) {
	e := testenv.New(t, testenv.Options{Brokers: 1})
	ctx := context.Background()
	for _, remote := range []string{"ext::sh -c id", "fd::3", "http://git.example.com/r.git", "git://git.example.com/r.git", "../other", "-uhttps://x/y"} {
		_, err := e.Admin.CreateProject(ctx, api.CreateProjectRequest{Name: "bad", GitRemote: remote})
		apiErr(t, err, 400, api.CodeInvalidRequest)
		r := remote
		_, err = e.Admin.UpdateProject(ctx, "default", api.UpdateProjectRequest{GitRemote: &r})
		apiErr(t, err, 400, api.CodeInvalidRequest)
	}
	if _, err := e.Admin.GetProject(ctx, "bad"); err == nil {
		t.Error("a refused project was stored")
	}
	if p, err := e.Admin.GetProject(ctx, "default"); err != nil || p.GitRemote != "" {
		t.Errorf("default project after refused updates: %+v, %v", p, err)
	}
	for i, remote := range []string{"https://github.com/team/r.git", "ssh://git@github.com/team/r.git", "git@github.com:team/r.git", "/srv/git/r.git", "file:///srv/git/r.git"} {
		if _, err := e.Admin.CreateProject(ctx, api.CreateProjectRequest{Name: "ok" + string(rune('a'+i)), GitRemote: remote}); err != nil {
			t.Errorf("create with %s: %v", remote, err)
		}
	}
}
