package postgres

import (
	"context"
	"fmt"
)

// GetSetting returns the value stored under key; ErrNotFound if unset.
func (s *Store) GetSetting(ctx context.Context, key string) ([]byte, error) {
	var v []byte
	if err := s.pool.QueryRow(ctx, `SELECT value FROM settings WHERE key = $1`, key).Scan(&v); err != nil {
		return nil, mapErr(err, fmt.Sprintf("setting %q", key))
	}
	if v == nil {
		v = []byte{}
	}
	return v, nil
}

// PutSetting stores value under key, replacing any previous value.
func (s *Store) PutSetting(ctx context.Context, key string, value []byte) error {
	if value == nil {
		value = []byte{} // the column is NOT NULL; nil means "empty" here
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO settings (key, value) VALUES ($1, $2)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value`, key, value)
	return mapErr(err, fmt.Sprintf("put setting %q", key))
}
