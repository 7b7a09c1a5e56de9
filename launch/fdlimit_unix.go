//go:build unix

package launch

import "syscall"

// fdLimit is the process's soft limit of open file descriptors (0 if
// unknown).
func fdLimit() uint64 {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0
	}
	return uint64(rl.Cur)
}
