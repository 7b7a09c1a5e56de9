package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
)

// newInstallBinaryCmd is the hidden `scion install-binary DEST`: it copies
// this (static) executable to DEST. The Kubernetes runtime's init
// container runs it from the scion image to put the binary where the
// agent container mounts it read-only; a scratch image has no cp.
func newInstallBinaryCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "install-binary DEST",
		Short:  "Copy this scion binary to DEST (for the Kubernetes runtime's init container)",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			self, err := scionBinary()
			if err != nil {
				return err
			}
			return installBinary(self, args[0])
		},
	}
}

// installBinary copies src to dst, executable, through a temporary file in
// dst's directory so that a reader never sees half a binary.
func installBinary(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".scion-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, in); err != nil {
		tmp.Close()
		return fmt.Errorf("install-binary: %w", err)
	}
	if err := tmp.Chmod(0o755); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dst)
}

// scionBinary is this executable's path, symlinks resolved.
func scionBinary() (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(self)
}
