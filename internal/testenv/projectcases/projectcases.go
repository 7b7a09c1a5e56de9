// Package projectcases is the one table of good and bad project create
// values that the api rule, the CLI's `scion project create` and the
// Hub's POST /projects are each tested with: a value one refuses, all
// refuse, the first before anything is sent or written.
package projectcases

import (
	"strings"

	"github.com/scion-go/scion/api"
)

// Case is one create; OK says every layer accepts it.
type Case struct {
	Name string
	Req  api.CreateProjectRequest
	OK   bool
}

// Cases are the values of the rules: the name, git remote, sharing mode,
// default broker reference and active profile.
var Cases = []Case{
	{"plain", api.CreateProjectRequest{Name: "web"}, true},
	{"https remote, worktrees", api.CreateProjectRequest{Name: "api", GitRemote: "https://git.example/team/api.git", SharingMode: api.SharingWorktreePerAgent}, true},
	{"profile", api.CreateProjectRequest{Name: "gpu", ActiveProfile: "k8s"}, true},
	{"name upper case", api.CreateProjectRequest{Name: "Web"}, false},
	{"name of 64", api.CreateProjectRequest{Name: strings.Repeat("p", 64)}, false},
	{"sharing mode unknown", api.CreateProjectRequest{Name: "m1", SharingMode: "copy"}, false},
	{"remote with a newline", api.CreateProjectRequest{Name: "m2", GitRemote: "https://g/x.git\nhttps://g/y.git"}, false},
	{"remote over ext::", api.CreateProjectRequest{Name: "m3", GitRemote: "ext::sh -c id"}, false},
	{"profile with a dot", api.CreateProjectRequest{Name: "m4", ActiveProfile: "k8s.gpu"}, false},
	{"broker reference of 129", api.CreateProjectRequest{Name: "m5", DefaultBroker: strings.Repeat("b", 129)}, false},
}
