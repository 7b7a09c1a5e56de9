package api

import (
	"errors"
	"os"
	"testing"
)

func TestRedactURLs(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`proxy_url: "ftp://user:hunter2@p:3128" is not an http:// proxy`, `proxy_url: "ftp://***@p:3128" is not an http:// proxy`},
		{"https://tok@github.com/o/r.git", "https://***@github.com/o/r.git"},
		{"http://u:p@ss@proxy:3128/x", "http://***@proxy:3128/x"},
		{`invalid 'proxy-url' "socks4://u:hunter2@p:1080" for cluster`, `invalid 'proxy-url' "socks4://***@p:1080" for cluster`},
		{"two: http://a:b@x and https://c:d@y/z", "two: http://***@x and https://***@y/z"},
		{`host: "user:hunter2@bastion:22" is not host or host:port`, `host: "***@bastion:22" is not host or host:port`},
		{"proxy=user:hunter2@p:3128", "proxy=***@p:3128"},
		{"user:hunter2@p:3128", "***@p:3128"},
		// No secret: left alone.
		{"git@github.com:o/r.git", "git@github.com:o/r.git"},
		{"mail me@example.com", "mail me@example.com"},
		{"https://host/path@v1", "https://host/path@v1"},
		{"error: dial tcp 127.0.0.1:1: connection refused", "error: dial tcp 127.0.0.1:1: connection refused"},
		{"ssh: handshake failed at 10:00", "ssh: handshake failed at 10:00"},
	} {
		if got := RedactURLs(tc.in); got != tc.want {
			t.Errorf("RedactURLs(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://u:hun ter2@p:3128":   "http://***@p:3128",
		`u:pa"ss@p:3128`:             "***@p:3128",
		"user@bastion":               "***@bastion",
		"http://p:3128":              "http://p:3128",
		"see http://u:p@x and a@b c": "see http://***@b c", // a value: all before its last @
	} {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRedactError(t *testing.T) {
	if RedactError(nil) != nil {
		t.Fatal("nil")
	}
	plain := errors.New("no url here")
	if RedactError(plain) != plain {
		t.Error("an error without a URL is kept as it is")
	}
	err := RedactError(&os.PathError{Op: "open", Path: "http://u:hunter2@x/f", Err: os.ErrNotExist})
	if err.Error() != "open http://***@x/f: file does not exist" || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%v", err)
	}
}
