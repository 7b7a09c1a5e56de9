package launch

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"testing"
)

// Every daemon log line goes through the redacting handler: the message,
// string, error and %v attributes, groups and With attributes lose any
// URL's userinfo; the rest of the line stays.
func TestDaemonLogLinesRedactURLUserinfo(t *testing.T) {
	var buf bytes.Buffer
	old := logOutput
	logOutput = &buf
	t.Cleanup(func() { logOutput = old })
	log := newLogger("debug", "text").With("proxy", "http://tokenuser:hunter2@p:3128")
	u, _ := url.Parse("https://tokenuser:hunter2@api.x:6443/version")
	log.Warn("spoke ftp://tokenuser:hunter2@p:3128 refused", "err", errors.New(`invalid 'proxy-url' "tokenuser:hunter2@p:3128"`),
		"url", u, "n", 3)
	log.WithGroup("g").Info("grouped", "remote", "https://tokenuser:hunter2@github.com/o/r.git")
	out := buf.String()
	if strings.Contains(out, "hunter2") || strings.Contains(out, "tokenuser") {
		t.Fatalf("userinfo logged:\n%s", out)
	}
	for _, want := range []string{`msg="spoke ftp://***@p:3128 refused"`, "proxy=http://***@p:3128", `err="invalid 'proxy-url' \"***@p:3128\""`,
		"url=https://***@api.x:6443/version", "n=3", "g.remote=https://***@github.com/o/r.git"} {
		if !strings.Contains(out, want) {
			t.Errorf("%s not in:\n%s", want, out)
		}
	}
}

// --log-format json: one JSON object per line, redacted the same way.
func TestDaemonLogJSONFormat(t *testing.T) {
	var buf bytes.Buffer
	old := logOutput
	logOutput = &buf
	t.Cleanup(func() { logOutput = old })
	log := newLogger("info", "json")
	log.Info("hub listening", "url", "https://u:hunter2@hub:8443", "n", 2)
	log.Debug("not at info")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("want one line, got:\n%s", buf.String())
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatalf("not JSON: %v: %s", err, lines[0])
	}
	if rec["msg"] != "hub listening" || rec["level"] != "INFO" || rec["url"] != "https://***@hub:8443" || rec["n"] != float64(2) {
		t.Fatalf("line %v", rec)
	}
}
