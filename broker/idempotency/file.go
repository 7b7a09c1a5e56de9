package idempotency

import (
	"bufio"
	"bytes"
	"container/list"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/scion-go/scion/api"
)

// Defaults of FileOptions. A day of keys covers any retry the Hub
// makes (its own dispatch deadline is seconds, a queued dispatch waits at
// most as long as the broker is away) with a wide margin, and 10,000
// recent commands bound the file to a few MB.
const (
	DefaultKeys = 10000
	DefaultTTL  = 24 * time.Hour
)

// FileOptions tune a FileStore; zero values mean the defaults.
type FileOptions struct {
	// MaxKeys is how many of the most recent keys are kept.
	MaxKeys int
	// TTL is how long a key is kept; older ones are forgotten.
	TTL time.Duration
	// Sync makes every Put wait for an fsync of its line (shared by
	// concurrent Puts). Without it a line is in the kernel's page cache
	// when Put returns: it survives the broker process dying (kill -9, a
	// panic), which is what a replay follows, but not a power loss. The
	// runtime's own state still guards a replay after one (a second create
	// is refused as existing, a second stop is a no-op), so the default
	// skips the fsync that would otherwise sit on every command's answer.
	Sync   bool
	Logger *slog.Logger
	// Now is the store's clock for the keys' ages (nil: time.Now); tests
	// advance a fake one past the TTL.
	Now func() time.Time
}

// FileStore is a Store that survives broker restarts: a
// replay of a command whose answer was lost (the Hub retrying with the
// same key after the broker restarted) is answered from the record instead
// of starting, stopping or deleting a second time.
//
// It is an append-only log of JSON lines, one per result, in
// dir/keys.jsonl, with an in-memory index. Put returns once its line is
// written (and, with Sync, fsynced; concurrent Puts then share one fsync),
// so a broker killed right after answering still knows the key. The log is
// compacted (rewritten with the live keys only, then renamed over the old
// one) on open and whenever it has grown to twice MaxKeys lines. A torn
// last line, which a crash mid-append leaves, is skipped on open.
//
// A crash between a command's effect and its Put still loses the record;
// the runtime's own state then guards the replay (a second stop of an
// exited container is a no-op, a second create is refused as existing).
type FileStore struct {
	path    string
	maxKeys int
	ttl     time.Duration
	fsync   bool
	log     *slog.Logger
	now     func() time.Time

	syncMu sync.Mutex // held while fsyncing or compacting; taken before mu
	synced uint64     // lines known durable (guarded by syncMu)

	mu      sync.Mutex
	f       *os.File
	items   map[string]*list.Element // value: *fileEntry
	order   *list.List               // oldest first
	written uint64                   // lines appended since open
	lines   int                      // lines in the file
	closed  bool
}

type fileEntry struct {
	Key    string          `json:"k"`
	At     int64           `json:"t"` // unix nanoseconds
	Body   json.RawMessage `json:"b,omitempty"`
	Err    *api.Error      `json:"e,omitempty"`
	Status int             `json:"s,omitempty"` // Err.Status, which api.Error does not marshal
}

// FileName is the store's log in its directory.
const FileName = "keys.jsonl"

// NewFileStore opens (creating if needed) the store in dir and compacts
// it.
func NewFileStore(dir string, opts FileOptions) (*FileStore, error) {
	if opts.MaxKeys <= 0 {
		opts.MaxKeys = DefaultKeys
	}
	if opts.TTL <= 0 {
		opts.TTL = DefaultTTL
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("idempotency store: %w", err)
	}
	s := &FileStore{path: filepath.Join(dir, FileName), maxKeys: opts.MaxKeys, ttl: opts.TTL,
		fsync: opts.Sync, log: opts.Logger, now: opts.Now, items: map[string]*list.Element{}, order: list.New()}
	if err := s.load(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.compactLocked(); err != nil {
		return nil, err
	}
	return s, nil
}

// load reads the log into memory: later lines win, expired and surplus
// keys are dropped.
func (s *FileStore) load() error {
	f, err := os.Open(s.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("idempotency store: %w", err)
	}
	defer f.Close()
	r := bufio.NewReader(f)
	cutoff := s.now().Add(-s.ttl).UnixNano()
	bad := 0
	for {
		line, err := r.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var e fileEntry
			// A torn append does not parse. (One cut just before its
			// newline does, and is whole: the rewrite below ends it.)
			if jerr := json.Unmarshal(line, &e); jerr != nil || e.Key == "" {
				bad++
			} else if e.At > cutoff {
				s.addLocked(&e)
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("idempotency store: read %s: %w", s.path, err)
		}
	}
	if bad > 0 {
		s.log.Warn("idempotency store: skipped unreadable lines (a crash mid-write leaves one)", "path", s.path, "lines", bad)
	}
	return nil
}

// addLocked indexes e as the newest entry, evicting the oldest beyond
// maxKeys.
func (s *FileStore) addLocked(e *fileEntry) {
	if el, ok := s.items[e.Key]; ok {
		s.order.Remove(el)
	}
	s.items[e.Key] = s.order.PushBack(e)
	for s.order.Len() > s.maxKeys {
		old := s.order.Front()
		s.order.Remove(old)
		delete(s.items, old.Value.(*fileEntry).Key)
	}
}

// Get implements Store.
func (s *FileStore) Get(key string) (Result, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	el, ok := s.items[key]
	if !ok {
		return Result{}, false
	}
	e := el.Value.(*fileEntry)
	if s.now().Sub(time.Unix(0, e.At)) > s.ttl {
		s.order.Remove(el)
		delete(s.items, key)
		return Result{}, false
	}
	r := Result{Body: e.Body, Err: e.Err}
	if r.Err != nil && e.Status != 0 {
		c := *r.Err
		c.Status = e.Status
		r.Err = &c
	}
	return r, true
}

// Put implements Store. It returns once the result is on disk;
// a write error is logged (the result stays known until the broker
// restarts).
func (s *FileStore) Put(key string, r Result) {
	e := &fileEntry{Key: key, At: s.now().UnixNano(), Body: r.Body, Err: r.Err}
	if r.Err != nil {
		e.Status = r.Err.Status
	}
	line, err := json.Marshal(e)
	if err != nil {
		s.log.Error("idempotency store: encode", "key", key, "err", err)
		return
	}
	line = append(line, '\n')
	s.mu.Lock()
	s.addLocked(e)
	if s.closed {
		s.mu.Unlock()
		return
	}
	// One Write per line: O_APPEND puts it at the end in one piece.
	if _, err := s.f.Write(line); err != nil {
		s.mu.Unlock()
		s.log.Error("idempotency store: append", "path", s.path, "err", err)
		return
	}
	s.written++
	s.lines++
	mine := s.written
	s.mu.Unlock()
	s.sync(mine)
}

// sync makes lines up to seq durable (with Sync) and compacts the log when
// it has grown. Whoever holds syncMu syncs everything written so far, so
// Puts waiting behind it usually find their line already durable.
func (s *FileStore) sync(seq uint64) {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	if s.fsync && s.synced < seq {
		s.mu.Lock()
		f, upto, closed := s.f, s.written, s.closed
		s.mu.Unlock()
		if closed {
			return
		}
		if err := f.Sync(); err != nil {
			s.log.Error("idempotency store: fsync", "path", s.path, "err", err)
			return
		}
		s.synced = upto
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lines >= 2*s.maxKeys && !s.closed {
		if err := s.compactLocked(); err != nil {
			s.log.Error("idempotency store: compact", "path", s.path, "err", err)
		}
	}
}

// compactLocked rewrites the log with the live entries and reopens it for
// appending. The new file is complete and fsynced before it replaces the
// old one, so a crash leaves one or the other. Callers hold mu (and
// syncMu, or are the only user).
func (s *FileStore) compactLocked() error {
	tmp := s.path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("idempotency store: %w", err)
	}
	w := bufio.NewWriter(f)
	cutoff := s.now().Add(-s.ttl).UnixNano()
	n := 0
	for el := s.order.Front(); el != nil; {
		next := el.Next()
		e := el.Value.(*fileEntry)
		if e.At <= cutoff {
			s.order.Remove(el)
			delete(s.items, e.Key)
		} else {
			b, err := json.Marshal(e)
			if err == nil {
				_, _ = w.Write(b)
				err = w.WriteByte('\n')
			}
			if err != nil {
				f.Close()
				return fmt.Errorf("idempotency store: write %s: %w", tmp, err)
			}
			n++
		}
		el = next
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("idempotency store: write %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("idempotency store: fsync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("idempotency store: %w", err)
	}
	if err := os.Rename(tmp, s.path); err != nil {
		return fmt.Errorf("idempotency store: %w", err)
	}
	syncDir(filepath.Dir(s.path))
	af, err := os.OpenFile(s.path, os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("idempotency store: %w", err)
	}
	if s.f != nil {
		s.f.Close()
	}
	s.f, s.lines = af, n
	// Everything in the new file is durable.
	s.synced = s.written
	return nil
}

// syncDir makes a rename in dir durable (best effort: not every platform
// can fsync a directory).
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}

// Close closes the log. Later Puts are kept in memory only.
func (s *FileStore) Close() error {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	return s.f.Close()
}
