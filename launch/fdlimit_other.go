//go:build !unix

package launch

// fdLimit is unknown off Unix.
func fdLimit() uint64 { return 0 }
