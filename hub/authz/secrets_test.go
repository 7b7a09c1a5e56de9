package authz

import "testing"

// Naming a secret in an agent create hands its value to the new agent:
// for a project secret, only the project's owner or an admin (and their
// agent-creating tokens) may; an agent only hands on what it holds.
func TestSecretUse(t *testing.T) {
	p2 := &Project{ID: "p2", Owner: "uo"} // another member's project
	sec := func(p *Project, held bool) Resource {
		return Resource{Project: p, Secret: &SecretRes{Name: "DB_PASSWORD", Held: held}}
	}
	hubWide := sec(nil, false)
	tests := []struct {
		name   string
		c      Caller
		r      Resource
		ok     bool
		hidden bool
	}{
		{"admin names any project's secret", admin, sec(p2, false), true, false},
		{"owner names its project's secret", member, sec(p1, false), true, false},
		{"member cannot name another member's project secret", member, sec(p2, false), false, false},
		{"other member cannot name the owner's project secret", other, sec(p1, false), false, false},
		{"viewer names nothing", viewer, sec(p1, false), false, false},
		{"viewer cannot name a hub-wide secret", viewer, hubWide, false, false},
		{"member names a hub-wide secret", member, hubWide, true, false},
		{"owner's create token names its project's secret", tokMake, sec(p1, false), true, false},
		{"create token names a hub-wide secret", tokMake, hubWide, true, false},
		{"update token does not create agents", tokUpd, sec(p1, false), false, false},
		{"read token names nothing", tokRead, hubWide, false, false},
		{"token never exceeds its owner", viewTok, sec(p1, false), false, false},
		{"token of a non-owner cannot name the project's secret", Caller{Kind: Token, ID: "t9", UserID: "uo", Role: RoleMember, ProjectID: "p1", Scopes: []string{ScopeAgentCreate}}, sec(p1, false), false, false},
		{"token outside its project is hidden", tokMake, sec(p2, false), false, true},
		{"agent hands on a held project secret", parent, sec(p1, true), true, false},
		{"agent hands on a held hub-wide secret", parent, sec(nil, true), true, false},
		{"agent cannot name a secret it was not given", parent, sec(p1, false), false, false},
		{"coordinator cannot name a secret it was not given", coord, hubWide, false, false},
		{"agent of another project sees nothing", outsider, sec(p1, true), false, true},
		{"broker names nothing", brk, hubWide, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Can(tt.c, SecretUse, tt.r)
			if (got == nil) != tt.ok {
				t.Fatalf("Can(%s %s, %s) = %v, want ok=%v", tt.c.Kind, tt.c.ID, SecretUse, got, tt.ok)
			}
			if got != nil && got.Hidden != tt.hidden {
				t.Fatalf("hidden = %v, want %v (%s)", got.Hidden, tt.hidden, got.Reason)
			}
		})
	}
}
