package main

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"syscall"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/scion-go/scion/internal/testenv/sshd"
	"github.com/scion-go/scion/spoke/tunnel"
)

// sshTier compares spoke/tunnel's DialContext with `ssh -L` through one
// sshd, both offering cipher first when it is set.
func sshTier(dir, src, cipher string, rounds, per int, size int64) error {
	bin, err := sshd.Binary()
	if err != nil {
		return fmt.Errorf("no sshd (apt-get install openssh-server): %w", err)
	}
	client, keyPEM, err := newKey()
	if err != nil {
		return err
	}
	dir, err = os.MkdirTemp(dir, "ssh")
	if err != nil {
		return err
	}
	srv, err := sshd.Launch(bin, dir, client.PublicKey())
	if err != nil {
		return err
	}
	defer srv.Stop()
	u, err := user.Current()
	if err != nil {
		return err
	}

	cfg := tunnel.Config{Host: srv.Addr, User: u.Username, PrivateKey: keyPEM, KnownHosts: srv.KnownHosts()}
	if cipher != "" {
		cfg.Ciphers = []string{cipher}
	}
	tun, err := tunnel.New(cfg)
	if err != nil {
		return err
	}
	defer tun.Close()
	tunArm := arm{name: "tunnel", get: func(ctx context.Context) (int64, error) {
		c, err := tun.DialContext(ctx, "tcp", src)
		if err != nil {
			return 0, err
		}
		defer c.Close()
		return readAll(c)
	}}

	local, stop, negotiated, err := sshL(dir, srv, u.Username, keyPEM, src, cipher)
	if err != nil {
		return err
	}
	defer stop()
	sshArm := arm{name: "ssh -L", note: negotiated, get: func(ctx context.Context) (int64, error) {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", local)
		if err != nil {
			return 0, err
		}
		defer c.Close()
		return readAll(c)
	}}

	// The tunnel connects on its first dial: read its cipher after one.
	if _, err := tunArm.get(context.Background()); err != nil {
		return fmt.Errorf("tunnel: %w", err)
	}
	if alg, ok := tun.Algorithms(); ok {
		tunArm.note = alg.Read.Cipher
	}
	title := "SSH tier, each client's default cipher"
	if cipher != "" {
		title = "SSH tier, " + cipher + " forced on both"
	}
	return compare(title, []arm{tunArm, sshArm}, rounds, per, size)
}

// sshL starts `ssh -N -L` to src through srv and returns the local
// address, a stop function and the server-to-client cipher it negotiated
// (from its -v log).
func sshL(dir string, srv *sshd.Server, user string, keyPEM []byte, src, cipher string) (string, func(), string, error) {
	path, err := exec.LookPath("ssh")
	if err != nil {
		return "", nil, "", fmt.Errorf("no ssh client (apt-get install openssh-client): %w", err)
	}
	key, kh := filepath.Join(dir, "id"), filepath.Join(dir, "known_hosts")
	if err := os.WriteFile(key, keyPEM, 0o600); err != nil {
		return "", nil, "", err
	}
	if err := os.WriteFile(kh, []byte(srv.KnownHosts()+"\n"), 0o600); err != nil {
		return "", nil, "", err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, "", err
	}
	local := ln.Addr().String()
	ln.Close()
	host, port, _ := net.SplitHostPort(srv.Addr)
	args := []string{"-v", "-N", "-F", "none", "-p", port, "-i", key,
		"-o", "UserKnownHostsFile=" + kh, "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes",
		"-o", "ExitOnForwardFailure=yes", "-L", local + ":" + src}
	if cipher != "" {
		args = append(args, "-c", cipher)
	}
	cmd := exec.Command(path, append(args, user+"@"+host)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return "", nil, "", err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, "", err
	}
	stop := func() { cmd.Process.Kill(); cmd.Wait() }
	// "debug1: kex: server->client cipher: chacha20-poly1305@openssh.com MAC: <implicit> compression: none"
	re := regexp.MustCompile(`server->client cipher: (\S+)`)
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sent := false
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil && !sent {
				found <- m[1]
				sent = true
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", local, time.Second)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			stop()
			return "", nil, "", fmt.Errorf("ssh -L not listening on %s: %v", local, err)
		}
		time.Sleep(20 * time.Millisecond) // polling for the child's listen
	}
	negotiated := "?"
	select {
	case negotiated = <-found:
	case <-time.After(time.Second):
	}
	return local, stop, negotiated, nil
}

// newKey is a fresh ed25519 client key: its signer and unencrypted PEM.
func newKey() (ssh.Signer, []byte, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	s, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		return nil, nil, err
	}
	blk, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		return nil, nil, err
	}
	return s, pem.EncodeToMemory(blk), nil
}
