// The Hub's signing keys at rest: the agent-token signing key (a setting)
// and each broker's HMAC secret (its record) are sealed with the secrets
// key, which lives outside the database, so a copy of the database alone
// mints no agent token and signs no broker handshake.

package identity

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/scion-go/scion/store"
)

// sealedPrefix marks a sealed key. Keys written by older versions are
// plain (a broker secret is hex text, the token key raw bytes), never
// starting with it; New seals those in place.
var sealedPrefix = []byte("sealed:v1:")

func isSealed(v []byte) bool { return bytes.HasPrefix(v, sealedPrefix) }

// keyAD binds a sealed key to what it is for: the token key cannot be
// swapped for a broker's secret, nor one broker's for another's. The NUL
// keeps it apart from the project/name additional data of Hub secrets.
func keyAD(purpose string) []byte { return []byte("scion-key\x00" + purpose) }

const tokenKeyPurpose = "agent-token"

// settingTokenKey is the setting holding the agent-token signing key. It
// is the system's only: hub/authstore opens it to no request.
const settingTokenKey = "agent_token_key"

func brokerKeyPurpose(brokerID string) string { return "broker/" + brokerID }

func (b *SecretBox) sealKey(purpose string, key []byte) []byte {
	nonce := NewSecret(b.aead.NonceSize())
	return append(append([]byte{}, sealedPrefix...), b.aead.Seal(nonce, nonce, key, keyAD(purpose))...)
}

func (b *SecretBox) openKey(purpose string, sealed []byte) ([]byte, error) {
	v := bytes.TrimPrefix(sealed, sealedPrefix)
	n := b.aead.NonceSize()
	if len(v) < n {
		return nil, errors.New("sealed key too short")
	}
	return b.aead.Open(nil, v[:n], v[n:], keyAD(purpose))
}

// storedKey is how key is kept in the database: sealed when the Hub has a
// secrets key (always, when started by `scion server start`), else plain
// (a Hub embedded without one, as some tests run it).
func (s *Service) storedKey(purpose string, key []byte) []byte {
	if s.secrets == nil {
		return key
	}
	return s.secrets.sealKey(purpose, key)
}

// openStoredKey reverses storedKey, and reads an older plain key as is.
func (s *Service) openStoredKey(purpose string, v []byte) ([]byte, error) {
	if !isSealed(v) {
		return v, nil
	}
	if s.secrets == nil {
		return nil, errors.New("it is sealed and this Hub has no secrets key: start it with the --secrets-key-file it used before")
	}
	k, err := s.secrets.openKey(purpose, v)
	if err != nil {
		return nil, errors.New("it does not open with this secrets key: start the Hub with the --secrets-key-file it used before")
	}
	return k, nil
}

// loadTokenKey reads the agent-token signing key, creating it once, and
// seals a plain one left by an older version. The key survives restarts,
// or every agent would be locked out of its token refresh.
func (s *Service) loadTokenKey(ctx context.Context) error {
	v, err := s.store.GetSetting(ctx, settingTokenKey)
	if isNotFound(err) {
		key := NewSecret(32)
		if err := s.store.PutSetting(ctx, settingTokenKey, s.storedKey(tokenKeyPurpose, key)); err != nil {
			return fmt.Errorf("hub: token key: %w", err)
		}
		s.tokenKey = key
		return nil
	}
	if err != nil {
		return fmt.Errorf("hub: token key: %w", err)
	}
	key, err := s.openStoredKey(tokenKeyPurpose, v)
	if err != nil {
		return fmt.Errorf("hub: the agent-token signing key in the database: %w", err)
	}
	if !isSealed(v) && s.secrets != nil {
		if err := s.store.PutSetting(ctx, settingTokenKey, s.storedKey(tokenKeyPurpose, key)); err != nil {
			return fmt.Errorf("hub: seal token key: %w", err)
		}
		s.log.Info("sealed the agent-token signing key with the secrets key")
	}
	s.tokenKey = key
	return nil
}

// sealBrokerSecrets seals every broker secret an older version stored
// plain. It runs at start, before the Hub serves.
func (s *Service) sealBrokerSecrets(ctx context.Context) error {
	if s.secrets == nil {
		return nil
	}
	n := 0
	page := store.Page{Limit: 1000}
	for {
		bs, next, _, err := s.store.ListBrokers(ctx, page)
		if err != nil {
			return err
		}
		for _, b := range bs {
			if isSealed(b.Secret) || len(b.Secret) == 0 {
				continue
			}
			b.Secret = s.storedKey(brokerKeyPurpose(b.ID), b.Secret)
			if err := s.store.UpdateBroker(ctx, b); err != nil {
				return fmt.Errorf("hub: seal broker secret: %w", err)
			}
			n++
		}
		if next == "" {
			break
		}
		page.Cursor = next
	}
	if n > 0 {
		s.log.Info("sealed broker secrets with the secrets key", "brokers", n)
	}
	return nil
}

// SealBrokerSecret is how a new broker's HMAC secret is kept in its
// record (sealed for that broker alone when the Hub has a secrets key).
func (s *Service) SealBrokerSecret(brokerID string, secret []byte) []byte {
	return s.storedKey(brokerKeyPurpose(brokerID), secret)
}

// brokerSecret is the HMAC key of broker b, opened.
func (s *Service) brokerSecret(b *store.Broker) ([]byte, error) {
	return s.openStoredKey(brokerKeyPurpose(b.ID), b.Secret)
}
