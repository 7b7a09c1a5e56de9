package sqlstore

// Placeholders until the store helper lands the ledger (migration 0010).

import (
	"context"
	"errors"
	"time"

	"github.com/scion-go/scion/store"
)

var errNotYet = errors.New("store: jobs ledger not implemented yet")

func (s *Store) CreateJob(ctx context.Context, j *store.Job) error         { return errNotYet }
func (s *Store) GetJob(ctx context.Context, id string) (*store.Job, error) { return nil, errNotYet }
func (s *Store) ListJobs(ctx context.Context, f store.JobFilter, page store.Page) ([]*store.Job, string, int, error) {
	return nil, "", 0, errNotYet
}
func (s *Store) UpdateJobWith(ctx context.Context, id string, fn func(*store.Job) error) (*store.Job, error) {
	return nil, errNotYet
}
func (s *Store) DeleteJob(ctx context.Context, id string) error { return errNotYet }
func (s *Store) ExpirePendingJobs(ctx context.Context, before time.Time, msg string) (int, error) {
	return 0, errNotYet
}
func (s *Store) PutBrokerSecret(ctx context.Context, x *store.BrokerSecret) error { return errNotYet }
func (s *Store) GetBrokerSecret(ctx context.Context, brokerID, name string) (*store.BrokerSecret, error) {
	return nil, errNotYet
}
func (s *Store) ListBrokerSecrets(ctx context.Context, brokerID string) ([]*store.BrokerSecret, error) {
	return nil, errNotYet
}
func (s *Store) DeleteBrokerSecret(ctx context.Context, brokerID, name string) error {
	return errNotYet
}
