package testenv

import (
	"bytes"
	"strings"
	"sync"
)

// logScan keeps every Hub and broker log line of an Env and the
// credentials and secret values the Env knows of, so that Close can check
// that none of them was ever logged. Every test built on testenv runs
// this check; tests add values of their own with Env.NeverLogged.
type logScan struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	secrets []string
}

// maxScanned bounds what is kept for the scan (a long test's logs).
const maxScanned = 64 << 20

func (l *logScan) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.buf.Len()+len(p) <= maxScanned {
		l.buf.Write(p)
	}
	return len(p), nil
}

func (l *logScan) add(s string) {
	if len(s) < 8 { // too short to tell apart from ordinary text
		return
	}
	l.mu.Lock()
	l.secrets = append(l.secrets, s)
	l.mu.Unlock()
}

// leaked returns the first known secret found in the logs, shortened.
func (l *logScan) leaked() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	logs := l.buf.String()
	for _, s := range l.secrets {
		if strings.Contains(logs, s) {
			return s[:6] + "..."
		}
	}
	return ""
}

// NeverLogged registers a value (a token, a secret) that must not appear
// in any Hub or broker log line of this Env; Close fails the test if it
// does.
func (e *Env) NeverLogged(values ...string) {
	for _, v := range values {
		e.scan.add(v)
	}
}
