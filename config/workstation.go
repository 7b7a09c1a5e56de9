package config

import (
	"encoding/json"
	"errors"
	"os"
)

// Workstation is written by `scion server start --workstation` so the
// local CLI finds the Hub and its bootstrap admin token with no set-up.
type Workstation struct {
	URL        string `json:"url"`
	AdminToken string `json:"adminToken"`
	BrokerID   string `json:"brokerId,omitempty"`
	PID        int    `json:"pid"`
}

// WorkstationPath is the workstation file.
func WorkstationPath() string { return Path("workstation.json") }

// LoadWorkstation reads the workstation file; nil if there is none.
func LoadWorkstation() (*Workstation, error) {
	b, err := os.ReadFile(WorkstationPath())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	w := &Workstation{}
	if err := json.Unmarshal(b, w); err != nil {
		return nil, err
	}
	return w, nil
}

// Save writes the workstation file (0600: it holds the admin token).
func (w *Workstation) Save() error {
	b, err := json.MarshalIndent(w, "", "  ")
	if err != nil {
		return err
	}
	return WriteFileAtomic(WorkstationPath(), b, 0o600)
}

// RemoveWorkstation deletes the workstation file.
func RemoveWorkstation() error {
	err := os.Remove(WorkstationPath())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}
