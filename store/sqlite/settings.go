package sqlite

import (
	"context"
	"fmt"
)

// GetSetting returns the value stored under key; ErrNotFound if unset.
func (s *Store) GetSetting(ctx context.Context, key string) ([]byte, error) {
	var v []byte
	if err := s.r.QueryRowContext(ctx, `SELECT value FROM settings WHERE key = ?`, key).Scan(&v); err != nil {
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
	_, err := s.w.ExecContext(ctx, `INSERT INTO settings (key, value) VALUES (?, ?)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value`, key, value)
	return mapErr(err, fmt.Sprintf("put setting %q", key))
}
