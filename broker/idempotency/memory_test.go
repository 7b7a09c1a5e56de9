package idempotency

import "sync"

// mapStore is the Store of the tests of Dedup: a map, forgetting nothing.
// The broker's store is the FileStore (a replay after a restart must still
// be answered from the record); its bounds are tested in file_test.go.
type mapStore struct {
	mu sync.Mutex
	m  map[string]Result
}

func newMapStore() *mapStore { return &mapStore{m: map[string]Result{}} }

func (s *mapStore) Get(key string) (Result, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.m[key]
	return r, ok
}

func (s *mapStore) Put(key string, r Result) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[key] = r
}
