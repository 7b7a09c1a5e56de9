//go:build !unix

package cli

// fdLimit is unknown off Unix.
func fdLimit() uint64 { return 0 }
