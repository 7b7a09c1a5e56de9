package tunnel

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/crypto/ssh"
)

// testServer is an SSH server built with x/crypto/ssh that accepts one
// client key and serves direct-tcpip by dialing the target itself, as a
// bastion does. frozen makes it stop answering global requests
// (keepalives) while the TCP connection stays up: a connection that died
// silently.
type testServer struct {
	t      *testing.T
	ln     net.Listener
	cfg    *ssh.ServerConfig
	hostPK ssh.PublicKey
	frozen atomic.Bool

	mu    sync.Mutex
	conns []net.Conn
	n     int // connections accepted
	wg    sync.WaitGroup
}

// newKey returns an ed25519 signer and its private key as OpenSSH PEM.
func newKey(t testing.TB) (ssh.Signer, []byte) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	blk, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	return s, pem.EncodeToMemory(blk)
}

func knownHostsLine(addr string, k ssh.PublicKey) string {
	host, port, _ := net.SplitHostPort(addr)
	return fmt.Sprintf("[%s]:%s %s", host, port, strings.TrimSpace(string(ssh.MarshalAuthorizedKey(k))))
}

func startServer(t *testing.T, client ssh.PublicKey) *testServer {
	t.Helper()
	host, _ := newKey(t)
	cfg := &ssh.ServerConfig{
		PublicKeyCallback: func(_ ssh.ConnMetadata, k ssh.PublicKey) (*ssh.Permissions, error) {
			if string(k.Marshal()) == string(client.Marshal()) {
				return nil, nil
			}
			return nil, fmt.Errorf("unknown key")
		},
	}
	cfg.AddHostKey(host)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &testServer{t: t, ln: ln, cfg: cfg, hostPK: host.PublicKey()}
	s.wg.Add(1)
	go s.accept()
	t.Cleanup(func() { ln.Close(); s.drop(); s.wg.Wait() })
	return s
}

func (s *testServer) addr() string { return s.ln.Addr().String() }

func (s *testServer) accepted() int { s.mu.Lock(); defer s.mu.Unlock(); return s.n }

// drop closes every connection, as a restarted bastion would.
func (s *testServer) drop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		c.Close()
	}
	s.conns = nil
}

func (s *testServer) accept() {
	defer s.wg.Done()
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns = append(s.conns, nc)
		s.n++
		s.mu.Unlock()
		s.wg.Add(1)
		go s.serve(nc)
	}
}

type directTCPIP struct {
	Host       string
	Port       uint32
	OriginHost string
	OriginPort uint32
}

func (s *testServer) serve(nc net.Conn) {
	defer s.wg.Done()
	defer nc.Close()
	_, chans, reqs, err := ssh.NewServerConn(nc, s.cfg)
	if err != nil {
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for r := range reqs {
			if s.frozen.Load() {
				continue // never answered: the client waits
			}
			r.Reply(false, nil) // as OpenSSH answers keepalive@openssh.com
		}
	}()
	for nch := range chans {
		if nch.ChannelType() != "direct-tcpip" {
			nch.Reject(ssh.UnknownChannelType, "no")
			continue
		}
		var d directTCPIP
		if err := ssh.Unmarshal(nch.ExtraData(), &d); err != nil {
			nch.Reject(ssh.ConnectionFailed, err.Error())
			continue
		}
		tc, err := net.Dial("tcp", net.JoinHostPort(d.Host, fmt.Sprint(d.Port)))
		if err != nil {
			nch.Reject(ssh.ConnectionFailed, err.Error())
			continue
		}
		ch, creqs, err := nch.Accept()
		if err != nil {
			tc.Close()
			continue
		}
		go ssh.DiscardRequests(creqs)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			done := make(chan struct{})
			go func() { io.Copy(tc, ch); tc.(*net.TCPConn).CloseWrite(); close(done) }()
			io.Copy(ch, tc)
			ch.Close()
			tc.Close()
			<-done
		}()
	}
}

// echoServer answers every connection with what it reads.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() { defer wg.Done(); io.Copy(c, c); c.Close() }()
		}
	}()
	return ln.Addr().String()
}
