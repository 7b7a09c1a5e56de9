package tunnel

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkThroughput downloads 16 MiB per iteration from a loopback
// source through Debian's sshd, once over this package's direct-tcpip
// channel and once over the stock client's `ssh -L` to the same sshd, in
// the same run (issue 16's acceptance: the tunnel at >= 0.9x ssh -L),
// each with its client's default cipher (logged). The sub-benchmarks run
// one after the other; `go run ./bench/spoke` interleaves the two arms and
// forces one cipher on both (docs/performance.md).
//
//	go test ./spoke/tunnel -run '^$' -bench Throughput -benchtime 20x -v
func BenchmarkThroughput(b *testing.B) {
	const size = 16 << 20
	src := sourceServer(b, size)
	signer, pemKey := newKey(b)
	srv := startSSHD(b, signer.PublicKey())

	b.Run("tunnel", func(b *testing.B) {
		tun, err := New(Config{Host: srv.addr, User: currentUser(b), PrivateKey: pemKey,
			KnownHosts: knownHostsLine(srv.addr, srv.hostPK)})
		if err != nil {
			b.Fatal(err)
		}
		defer tun.Close()
		dial := func() (net.Conn, error) { return tun.DialContext(context.Background(), "tcp", src) }
		download(b, dial, size)
		if alg, ok := tun.Algorithms(); ok {
			b.Logf("cipher %s", alg.Read.Cipher)
		}
	})

	b.Run("ssh-L", func(b *testing.B) {
		ssh, err := exec.LookPath("ssh")
		if err != nil {
			b.Skipf("no ssh client: %v", err)
		}
		dir := b.TempDir()
		key, kh := filepath.Join(dir, "id"), filepath.Join(dir, "known_hosts")
		os.WriteFile(key, pemKey, 0o600)
		os.WriteFile(kh, []byte(knownHostsLine(srv.addr, srv.hostPK)+"\n"), 0o600)
		host, port, _ := net.SplitHostPort(srv.addr)
		local := fmt.Sprintf("127.0.0.1:%d", freePort(b))
		cmd := exec.Command(ssh, "-N", "-p", port, "-i", key,
			"-o", "UserKnownHostsFile="+kh, "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes",
			"-o", "ExitOnForwardFailure=yes", "-L", local+":"+src, currentUser(b)+"@"+host)
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		defer func() { cmd.Process.Kill(); cmd.Wait() }()
		deadline := time.Now().Add(5 * time.Second)
		for {
			c, err := net.Dial("tcp", local)
			if err == nil {
				c.Close()
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("ssh -L not listening on %s: %v", local, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
		download(b, func() (net.Conn, error) { return net.Dial("tcp", local) }, size)
	})
}

func download(b *testing.B, dial func() (net.Conn, error), size int64) {
	b.SetBytes(size)
	buf := make([]byte, 256<<10)
	b.ResetTimer()
	for range b.N {
		c, err := dial()
		if err != nil {
			b.Fatal(err)
		}
		// 256 KiB reads, as a client streaming a body would: io.Copy to
		// io.Discard reads 8 KiB at a time.
		n, err := io.CopyBuffer(struct{ io.Writer }{io.Discard}, struct{ io.Reader }{c}, buf)
		c.Close()
		if err != nil || n != size {
			b.Fatalf("read %d of %d bytes: %v", n, size, err)
		}
	}
}

// sourceServer writes size bytes to every connection and closes it.
func sourceServer(b *testing.B, size int64) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	chunk := make([]byte, 256<<10)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				for left := size; left > 0; left -= int64(len(chunk)) {
					if _, err := c.Write(chunk[:min(left, int64(len(chunk)))]); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}
