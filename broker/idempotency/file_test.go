package idempotency

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/fakeclock"
)

func openFileStore(t *testing.T, dir string, opts FileOptions) *FileStore {
	t.Helper()
	opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	s, err := NewFileStore(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func fileLines(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	return strings.FieldsFunc(string(b), func(r rune) bool { return r == '\n' })
}

func TestFileStoreSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	s := openFileStore(t, dir, FileOptions{})
	refusal := api.Conflict(api.CodeAlreadyExists, "agent exists")
	s.Put("agent.create\x00create:r1", Result{Body: json.RawMessage(`{"agentId":"a1","state":"running"}`)})
	s.Put("agent.stop\x00queued:1", Result{Err: refusal})
	// No Close: a broker killed right after answering never closes.
	s2 := openFileStore(t, dir, FileOptions{})
	r, ok := s2.Get("agent.create\x00create:r1")
	if !ok || string(r.Body) != `{"agentId":"a1","state":"running"}` || r.Err != nil {
		t.Fatalf("create after reopen: %+v %v", r, ok)
	}
	r, ok = s2.Get("agent.stop\x00queued:1")
	if !ok || r.Err == nil || r.Err.Code != api.CodeAlreadyExists || r.Err.Status != 409 || r.Err.Message != "agent exists" {
		t.Fatalf("refusal after reopen: %+v %v", r.Err, ok)
	}
	if !remember(r) {
		t.Fatal("a reloaded refusal is no longer final")
	}
	if _, ok := s2.Get("other"); ok {
		t.Fatal("unknown key found")
	}
}

func TestFileStoreBoundsKeys(t *testing.T) {
	dir := t.TempDir()
	s := openFileStore(t, dir, FileOptions{MaxKeys: 10})
	for i := range 35 {
		s.Put(fmt.Sprintf("k%02d", i), Result{Body: json.RawMessage(fmt.Sprint(i))})
	}
	for i := range 35 {
		_, ok := s.Get(fmt.Sprintf("k%02d", i))
		if want := i >= 25; ok != want {
			t.Fatalf("k%02d kept = %v, want %v", i, ok, want)
		}
	}
	// Compaction keeps the file within twice the bound.
	if n := len(fileLines(t, dir)); n > 20 {
		t.Fatalf("%d lines in the log, want at most 20", n)
	}
	s2 := openFileStore(t, dir, FileOptions{MaxKeys: 10})
	if n := len(fileLines(t, dir)); n != 10 {
		t.Fatalf("%d lines after reopen, want the 10 kept keys", n)
	}
	if r, ok := s2.Get("k34"); !ok || string(r.Body) != "34" {
		t.Fatalf("newest key after reopen: %+v %v", r, ok)
	}
	if _, ok := s2.Get("k24"); ok {
		t.Fatal("evicted key came back after reopen")
	}
}

func TestFileStoreForgetsExpiredKeys(t *testing.T) {
	dir := t.TempDir()
	const ttl = time.Minute
	clock := fakeclock.New(time.Now())
	s := openFileStore(t, dir, FileOptions{TTL: ttl, Now: clock.Now})
	s.Put("old", Result{Body: json.RawMessage(`1`)})
	clock.Advance(ttl)
	if _, ok := s.Get("old"); !ok {
		t.Fatal("a key forgotten at its TTL, before it is past it")
	}
	clock.Advance(time.Millisecond)
	s.Put("new", Result{Body: json.RawMessage(`2`)})
	if _, ok := s.Get("old"); ok {
		t.Fatal("expired key answered")
	}
	if _, ok := s.Get("new"); !ok {
		t.Fatal("fresh key forgotten")
	}
	s2 := openFileStore(t, dir, FileOptions{TTL: time.Hour, Now: clock.Now})
	if _, ok := s2.Get("old"); !ok {
		t.Fatal("a longer TTL on reopen should keep the key")
	}
	clock.Advance(ttl)
	openFileStore(t, dir, FileOptions{TTL: ttl, Now: clock.Now})
	if n := len(fileLines(t, dir)); n != 0 {
		t.Fatalf("%d lines after reopening with every key expired", n)
	}
}

func TestFileStoreSkipsTornLine(t *testing.T) {
	dir := t.TempDir()
	s := openFileStore(t, dir, FileOptions{})
	s.Put("a", Result{Body: json.RawMessage(`1`)})
	s.Close()
	// A crash mid-append leaves half a line.
	f, err := os.OpenFile(filepath.Join(dir, FileName), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"k":"b","t":1`)
	f.Close()
	s2 := openFileStore(t, dir, FileOptions{})
	if _, ok := s2.Get("a"); !ok {
		t.Fatal("whole line lost")
	}
	s2.Put("c", Result{Body: json.RawMessage(`3`)})
	s3 := openFileStore(t, dir, FileOptions{})
	for _, k := range []string{"a", "c"} {
		if _, ok := s3.Get(k); !ok {
			t.Fatalf("%s lost after a torn line", k)
		}
	}
}

func TestFileStoreConcurrentPuts(t *testing.T) {
	dir := t.TempDir()
	s := openFileStore(t, dir, FileOptions{MaxKeys: 100})
	var wg sync.WaitGroup
	var puts atomic.Int64
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				k := fmt.Sprintf("g%d-%d", g, i)
				before := puts.Add(1)
				s.Put(k, Result{Body: json.RawMessage(`true`)})
				_, ok := s.Get(k)
				// Readable unless the bound of 100 already pushed it out:
				// that takes 100 newer entries, counting the up to 7 Puts of
				// other goroutines that started before this one but landed
				// after it.
				if !ok && puts.Load()-before < 100-8 {
					t.Errorf("%s not readable after Put", k)
				}
			}
		})
	}
	wg.Wait()
	s2 := openFileStore(t, dir, FileOptions{MaxKeys: 100})
	n := 0
	for g := range 8 {
		for i := range 50 {
			if _, ok := s2.Get(fmt.Sprintf("g%d-%d", g, i)); ok {
				n++
			}
		}
	}
	if n != 100 {
		t.Fatalf("%d keys after reopen, want the bound of 100", n)
	}
	for _, l := range fileLines(t, dir) {
		if !json.Valid([]byte(l)) {
			t.Fatalf("interleaved line %q", l)
		}
	}
}
