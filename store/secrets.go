package store

import (
	"context"
	"time"
)

// Secret is a named secret value, encrypted by the Hub before it reaches
// the store (the store never sees plaintext). (ProjectID, Name) is unique.
type Secret struct {
	ProjectID  string // "" for a hub-wide secret
	Name       string
	Ciphertext []byte
	CreatedBy  string // the principal that first put it
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// SecretStore stores secrets. Deleting a project deletes its secrets.
type SecretStore interface {
	// PutSecret inserts s or replaces the value of the secret with its
	// project and name. A new secret takes s.CreatedAt (now when zero)
	// and s.CreatedBy; a replaced one keeps its CreatedAt and CreatedBy.
	// UpdatedAt is set to now. On success s holds the stored record.
	// Name and Ciphertext must not be empty; a ProjectID that names no
	// project is ErrNotFound.
	PutSecret(ctx context.Context, s *Secret) error
	// GetSecret returns the secret with its ciphertext, or ErrNotFound.
	GetSecret(ctx context.Context, projectID, name string) (*Secret, error)
	// ListSecrets returns a project's secrets (projectID "": the hub-wide
	// ones) sorted by name, with Ciphertext nil.
	ListSecrets(ctx context.Context, projectID string) ([]*Secret, error)
	// DeleteSecret deletes a secret; ErrNotFound if there is none.
	DeleteSecret(ctx context.Context, projectID, name string) error
}
