package launch

import (
	"testing"

	"github.com/scion-go/scion/config"
)

func TestBrokerProfiles(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      []config.ProfileSettings
		wantDef string
		wantErr bool
	}{
		{"none", nil, "", false},
		{"first is the default", []config.ProfileSettings{{Name: "cpu"}, {Name: "gpu"}}, "cpu", false},
		{"explicit default", []config.ProfileSettings{{Name: "cpu"}, {Name: "gpu", Default: true}}, "gpu", false},
		{"two defaults", []config.ProfileSettings{{Name: "cpu", Default: true}, {Name: "gpu", Default: true}}, "", true},
		{"duplicate", []config.ProfileSettings{{Name: "cpu"}, {Name: "cpu"}}, "", true},
		{"bad name", []config.ProfileSettings{{Name: "Bad Name"}}, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := brokerProfiles(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			def := ""
			for _, p := range out {
				if p.Default {
					def = p.Name
				}
			}
			if def != tc.wantDef {
				t.Fatalf("default %q, want %q", def, tc.wantDef)
			}
		})
	}
}
