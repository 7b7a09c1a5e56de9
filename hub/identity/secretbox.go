package identity

import (
	"crypto/aes"
	"crypto/cipher"
	"errors"
	"fmt"
)

// SecretBox seals Hub secrets with AES-256-GCM under the Hub's secrets
// key, which lives outside the database (a key file), so a copy of the
// database alone does not reveal them. The additional data binds each
// ciphertext to its project and name: a value moved to another row does
// not open.
type SecretBox struct{ aead cipher.AEAD }

// newSecretBox is the box of the 32-byte secrets key.
func newSecretBox(key []byte) (*SecretBox, error) {
	if len(key) != 32 {
		return nil, fmt.Errorf("hub: the secrets key must be 32 bytes, got %d", len(key))
	}
	blk, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(blk)
	if err != nil {
		return nil, err
	}
	return &SecretBox{aead: aead}, nil
}

func secretAD(projectID, name string) []byte { return []byte(projectID + "/" + name) }

// Seal seals value, bound to its scope (a project, or a broker's) and
// name.
func (b *SecretBox) Seal(projectID, name string, value []byte) []byte {
	nonce := NewSecret(b.aead.NonceSize())
	return b.aead.Seal(nonce, nonce, value, secretAD(projectID, name))
}

// Open reverses Seal; a value moved to another scope or name does not
// open.
func (b *SecretBox) Open(projectID, name string, sealed []byte) ([]byte, error) {
	n := b.aead.NonceSize()
	if len(sealed) < n {
		return nil, errors.New("sealed secret too short")
	}
	return b.aead.Open(nil, sealed[:n], sealed[n:], secretAD(projectID, name))
}
