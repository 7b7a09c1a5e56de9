package authstore

import "context"

func (s *Store) GetSetting(ctx context.Context, key string) ([]byte, error) {
	if _, err := decide(ctx, "GetSetting", Subject{Setting: key}); err != nil {
		return nil, err
	}
	return s.inner.GetSetting(ctx, key)
}

func (s *Store) PutSetting(ctx context.Context, key string, value []byte) error {
	if _, err := decide(ctx, "PutSetting", Subject{Setting: key}); err != nil {
		return err
	}
	return s.inner.PutSetting(ctx, key, value)
}

func (s *Store) GetSettingVersion(ctx context.Context, key string) ([]byte, int64, error) {
	if _, err := decide(ctx, "GetSettingVersion", Subject{Setting: key}); err != nil {
		return nil, 0, err
	}
	return s.inner.GetSettingVersion(ctx, key)
}

func (s *Store) PutSettingIf(ctx context.Context, key string, value []byte, version int64) (int64, error) {
	if _, err := decide(ctx, "PutSettingIf", Subject{Setting: key}); err != nil {
		return 0, err
	}
	return s.inner.PutSettingIf(ctx, key, value, version)
}
