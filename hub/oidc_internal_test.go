package hub

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
)

func TestOIDCRoleFor(t *testing.T) {
	c := &OIDCConfig{AdminEmails: []string{" Boss@Example.com "}}
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
		if got := c.roleFor(tc.email, tc.verified); got != tc.want {
			t.Errorf("roleFor(%q, %v) with default %q = %s, want %s", tc.email, tc.verified, tc.def, got, tc.want)
		}
	}
}

func TestOIDCConfigValidate(t *testing.T) {
	ok := OIDCConfig{IssuerURL: "https://id.example.com", ClientID: "scion"}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []OIDCConfig{
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

func TestIPLimiter(t *testing.T) {
	l := newIPLimiter(60, 3) // one a second, bursts of three
	now := time.Unix(1000, 0)
	for i := 0; i < 3; i++ {
		if ok, _ := l.allow("a", now); !ok {
			t.Fatalf("request %d of the burst refused", i)
		}
	}
	ok, wait := l.allow("a", now)
	if ok || wait <= 0 || wait > time.Second {
		t.Fatalf("over the burst: ok=%v wait=%v", ok, wait)
	}
	if ok, _ := l.allow("b", now); !ok {
		t.Fatal("another address shares the bucket")
	}
	if ok, _ := l.allow("a", now.Add(time.Second)); !ok {
		t.Fatal("no refill after a second")
	}
	// The map stays bounded.
	for i := 0; i < maxBuckets+10; i++ {
		l.allow(fmt.Sprint("ip", i), now.Add(time.Duration(i)*time.Millisecond))
	}
	if len(l.buckets) > maxBuckets {
		t.Fatalf("%d buckets kept", len(l.buckets))
	}
}
