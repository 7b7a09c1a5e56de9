package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// connect asks the proxy to CONNECT to target and returns the status
// line's code, and on 200 the tunnel.
func connect(t *testing.T, p *Proxy, target string) (int, net.Conn) {
	t.Helper()
	c, err := net.DialTimeout("tcp", p.Addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatalf("CONNECT %s: %v\n%s", target, err, p.Log())
	}
	if resp.StatusCode != http.StatusOK {
		c.Close()
		return resp.StatusCode, nil
	}
	return resp.StatusCode, &bufConn{Conn: c, r: br}
}

type bufConn struct {
	net.Conn
	r *bufio.Reader
}

func (b *bufConn) Read(p []byte) (int, error) { return b.r.Read(p) }

// A CONNECT to an allowed port is a byte tunnel; to any other port it is
// refused.
func TestConnectAllowedPortOnly(t *testing.T) {
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	allowed := echo.Addr().(*net.TCPAddr).Port
	p := Start(t, allowed)
	code, c := connect(t, p, echo.Addr().String())
	if code != http.StatusOK {
		t.Fatalf("CONNECT to the allowed port: %d\n%s", code, p.Log())
	}
	fmt.Fprint(c, "ping\n")
	line, err := bufio.NewReader(c).ReadString('\n')
	c.Close()
	if err != nil || line != "ping\n" {
		t.Fatalf("through the tunnel: %q, %v", line, err)
	}
	other := net.JoinHostPort("127.0.0.1", strconv.Itoa(allowed+1))
	if code, _ := connect(t, p, other); code == http.StatusOK {
		t.Fatalf("CONNECT to a port not allowed was served")
	}
	if log := p.Log(); !strings.Contains(log, "CONNECT") {
		t.Errorf("tinyproxy's log does not show the CONNECT:\n%s", log)
	}
}

func TestConfig(t *testing.T) {
	got := config(3128, []int{6443, 7443}, "/tmp/x.log")
	for _, want := range []string{"Port 3128\n", "Listen 127.0.0.1\n", "Allow 127.0.0.1\n", "ConnectPort 6443\n", "ConnectPort 7443\n", "LogFile \"/tmp/x.log\"\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("config lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "Upstream") {
		t.Errorf("config has an upstream:\n%s", got)
	}
}
