package tunnel

import (
	"syscall"
	"testing"

	"golang.org/x/crypto/ssh"

	testsshd "github.com/scion-go/scion/internal/testenv/sshd"
)

// sshd is Debian's openssh-server run by the test (internal/testenv/sshd).
type sshd struct {
	addr   string
	hostPK ssh.PublicKey
	log    *testsshd.Log
	s      *testsshd.Server
}

func startSSHD(t testing.TB, client ssh.PublicKey) *sshd {
	t.Helper()
	s := testsshd.Start(t, client)
	return &sshd{addr: s.Addr, hostPK: s.HostKey, log: s.Log, s: s}
}

func (s *sshd) killSessions() int                     { return s.s.KillSessions() }
func (s *sshd) signalSessions(sig syscall.Signal) int { return s.s.SignalSessions(sig) }
func freePort(t testing.TB) int                       { return testsshd.FreePort(t) }
func currentUser(t testing.TB) string                 { return testsshd.User(t) }
