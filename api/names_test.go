package api

import (
	"errors"
	"net/http"
	"strings"
	"testing"
)

func TestValidName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"web", true},
		{"a", true},
		{"0", true},
		{"web-1", true},
		{"a-b-c", true},
		{strings.Repeat("a", 63), true},
		{"", false},
		{strings.Repeat("a", 64), false},
		{"-web", false},
		{"web-", false},
		{"Web", false}, // the CLI used to accept upper case
		{"a.b", false}, // ... and '.'
		{"a_b", false}, // ... and '_'
		{"..", false},  // a path segment
		{"../../etc", false},
		{"a/b", false},
		{"a b", false},
		{"a\nb", false}, // control characters
		{"a\rb", false},
		{"a\x00b", false},
		{"a\x1bb", false},
		{"ünï", false}, // non-ASCII
		{"web\u200b", false},
		// An ID's shape: lookups by ID, then by name, would mix them up.
		{"01936f0a-1b2c-7d3e-8f4a-5b6c7d8e9f00", false},
		{"01936f0a1b2c7d3e8f4a5b6c7d8e9f00", false},
		{"01936f0a-1b2c-7d3e-8f4a-5b6c7d8e9f0g", true},
		{"01936f0a-1b2c-7d3e-8f4a-5b6c7d8e9f0", true},
		{"deadbeef", true},
	} {
		if got := ValidName(tc.name); got != tc.ok {
			t.Errorf("ValidName(%q) = %v, want %v", tc.name, got, tc.ok)
		}
		err := CheckName("agent", tc.name)
		if (err == nil) != tc.ok {
			t.Errorf("CheckName(%q) = %v, want ok=%v", tc.name, err, tc.ok)
		}
		if err != nil {
			wantBadRequest(t, err)
			if !strings.Contains(err.Error(), "invalid agent name") {
				t.Errorf("CheckName(%q): %v does not name the kind", tc.name, err)
			}
		}
	}
}

// A refusal quotes the input, escaped and cut short: a hostile name is
// never echoed raw or whole.
func TestCheckNameQuotesInput(t *testing.T) {
	err := CheckName("project", "x\r\nSet-Cookie: a"+strings.Repeat("z", 100_000))
	msg := err.Error()
	if strings.ContainsAny(msg, "\r\n") {
		t.Fatalf("message holds a raw CR/LF: %q", msg)
	}
	if len(msg) > 300 {
		t.Fatalf("message is %d bytes: the input is echoed whole", len(msg))
	}
}

func TestCheckHarness(t *testing.T) {
	for _, tc := range []struct {
		h  string
		ok bool
	}{
		{"generic", true}, {"claude", true}, {"gemini", true},
		{"", false}, {"../../sh", false}, {"/bin/sh", false}, {"Generic", false}, {"generic\n", false},
	} {
		err := CheckHarness("default_harness", tc.h)
		if (err == nil) != tc.ok {
			t.Errorf("CheckHarness(%q) = %v, want ok=%v", tc.h, err, tc.ok)
		}
		if err != nil {
			wantBadRequest(t, err)
		}
	}
}

func TestCheckText(t *testing.T) {
	for _, tc := range []struct {
		name, v string
		max     int
		ok      bool
	}{
		{"empty", "", 10, true},
		{"plain", "https://git.example.com/a/b.git", 100, true},
		{"scp style", "git@github.com:a/b.git", 100, true},
		{"unicode text", "https://例え.jp/repo", 100, true},
		{"at the bound", strings.Repeat("a", 10), 10, true},
		{"over the bound", strings.Repeat("a", 11), 10, false},
		{"100 kB", strings.Repeat("a", 100_000), MaxGitRemoteLen, false},
		{"LF", "https://h/r\nx", 100, false},
		{"CR", "https://h/r\rx", 100, false},
		{"NUL", "a\x00", 100, false},
		{"tab", "a\tb", 100, false},
		{"ESC", "a\x1b[31m", 100, false},
		{"DEL", "a\x7f", 100, false},
		{"C1", "a\u0085b", 100, false},
		{"not UTF-8", "a\xffb", 100, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckText("gitRemote", tc.v, tc.max)
			if (err == nil) != tc.ok {
				t.Fatalf("CheckText(%q) = %v, want ok=%v", tc.v, err, tc.ok)
			}
			if err != nil {
				wantBadRequest(t, err)
				if !strings.HasPrefix(err.(*Error).Message, "gitRemote ") {
					t.Fatalf("message %q does not name the field", err.(*Error).Message)
				}
			}
		})
	}
}

func TestCheckGitRemoteText(t *testing.T) {
	if err := CheckGitRemoteText("https://git.example.com/team/repo.git"); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{strings.Repeat("h", MaxGitRemoteLen+1), "https://h/r\r\n[core]", "https://h/r\n"} {
		if err := CheckGitRemoteText(bad); err == nil {
			t.Errorf("accepted %s", Quote(bad))
		}
	}
}

func TestQuote(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"web", `"web"`},
		{"a\nb", `"a\nb"`},
		{strings.Repeat("a", 70), `"` + strings.Repeat("a", 64) + `"...`},
		// A cut never splits a rune.
		{strings.Repeat("a", 63) + "é", `"` + strings.Repeat("a", 63) + `"...`},
	} {
		if got := Quote(tc.in); got != tc.want {
			t.Errorf("Quote(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func wantBadRequest(t *testing.T, err error) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || e.Status != http.StatusBadRequest || e.Code != CodeInvalidRequest {
		t.Fatalf("%v: want 400 %s", err, CodeInvalidRequest)
	}
}

// TestValidEnvName: the rule of environment variable and secret names
// (the Hub's secrets, broker secrets, settings' required secrets, the
// fleet file's references, Job and agent env all call it).
func TestValidEnvName(t *testing.T) {
	for n, want := range map[string]bool{
		"A": true, "_": true, "GITHUB_TOKEN": true, "a1": true, strings.Repeat("S", 128): true,
		"": false, "1A": false, "A-B": false, "a.b": false, "A B": false, "É": false, "A=B": false, strings.Repeat("S", 129): false,
	} {
		if ValidEnvName(n) != want || ValidSecretName(n) != want {
			t.Errorf("%q: ValidEnvName %v, ValidSecretName %v; want %v", n, ValidEnvName(n), ValidSecretName(n), want)
		}
	}
}
