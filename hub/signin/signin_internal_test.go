package signin

import (
	"slices"
	"testing"

	"github.com/scion-go/scion/api"
)

func TestOIDCRoleFor(t *testing.T) {
	c := &Config{AdminEmails: []string{" Boss@Example.com "}}
	for _, tc := range []struct {
		email    string
		verified bool
		def      string
		want     string
	}{
		{"boss@example.com", true, "", api.RoleAdmin},
		{"BOSS@EXAMPLE.COM", true, api.RoleMember, api.RoleAdmin},
		{"boss@example.com", false, "", api.RoleViewer},
		{"other@example.com", true, "", api.RoleViewer},
		{"other@example.com", true, api.RoleMember, api.RoleMember},
		{"", true, "", api.RoleViewer},
	} {
		c.DefaultRole = tc.def
		if got := c.RoleFor(tc.email, tc.verified); got != tc.want {
			t.Errorf("roleFor(%q, %v) with default %q = %s, want %s", tc.email, tc.verified, tc.def, got, tc.want)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	ok := Config{IssuerURL: "https://id.example.com", ClientID: "scion"}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []Config{
		{ClientID: "scion"},
		{IssuerURL: "https://id.example.com"},
		{IssuerURL: "id.example.com", ClientID: "scion"},
		{IssuerURL: "https://id.example.com", ClientID: "scion", DefaultRole: "owner"},
	} {
		if bad.Validate() == nil {
			t.Errorf("%+v validated", bad)
		}
	}
}

func TestAuthStyles(t *testing.T) {
	for _, tc := range []struct {
		secret    bool
		supported []string
		want      []authStyle
	}{
		{false, nil, []authStyle{styleNone}},
		{true, nil, []authStyle{styleBasic, stylePost}},
		{true, []string{"client_secret_post"}, []authStyle{stylePost}},
		{true, []string{"client_secret_basic", "private_key_jwt"}, []authStyle{styleBasic}},
		{true, []string{"private_key_jwt"}, []authStyle{styleBasic, stylePost}},
	} {
		if got := authStyles(tc.secret, tc.supported); !slices.Equal(got, tc.want) {
			t.Errorf("authStyles(%v, %v) = %v, want %v", tc.secret, tc.supported, got, tc.want)
		}
	}
}
