package kube

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// LogFile is the file kwok serves as the log (every container's) of the
// pods of Job name in namespace; a pod not made by a Job uses its own
// name. The binder creates it empty when the pod is bound; SetJobLog and
// AppendJobLog write it, before or after the pod runs.
func (s *Spoke) LogFile(namespace, name string) string {
	return filepath.Join(s.LogDir, namespace, name+".log")
}

// SetJobLog makes content the log of Job name's pods, as GET pods/log
// returns it: line by line, each line ending in a newline (a last line
// without one gets one).
func (s *Spoke) SetJobLog(t testing.TB, namespace, name, content string) {
	t.Helper()
	s.writeLog(t, namespace, name, content, os.O_TRUNC)
}

// AppendJobLog adds lines to Job name's log, for a test that follows a
// running Job's log.
func (s *Spoke) AppendJobLog(t testing.TB, namespace, name, content string) {
	t.Helper()
	s.writeLog(t, namespace, name, content, os.O_APPEND)
}

func (s *Spoke) writeLog(t testing.TB, namespace, name, content string, mode int) {
	t.Helper()
	path := s.LogFile(namespace, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	fh, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|mode, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	if _, err := fh.WriteString(criLog(content, time.Now())); err != nil {
		t.Fatal(err)
	}
}

// criLog is content in the container runtime's log format, the one kwok
// reads (like a kubelet): "<RFC3339Nano> stdout F <line>" per line.
func criLog(content string, now time.Time) string {
	if content == "" {
		return ""
	}
	content = strings.TrimSuffix(content, "\n")
	ts := now.UTC().Format(time.RFC3339Nano)
	var b strings.Builder
	for line := range strings.SplitSeq(content, "\n") {
		b.WriteString(ts)
		b.WriteString(" stdout F ")
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.String()
}
