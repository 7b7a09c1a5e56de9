package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

type proxyProc struct {
	url, version string
	stop         func()
}

// startProxy runs tinyproxy on a free loopback port, CONNECT allowed to
// port only.
func startProxy(dir, port string) (*proxyProc, error) {
	bin, err := exec.LookPath("tinyproxy")
	if err != nil {
		return nil, fmt.Errorf("no tinyproxy (apt-get install tinyproxy): %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	_, lport, _ := net.SplitHostPort(addr)
	conf := filepath.Join(dir, "tinyproxy.conf")
	if err := os.WriteFile(conf, fmt.Appendf(nil, "Port %s\nListen 127.0.0.1\nTimeout 60\nMaxClients 50\nAllow 127.0.0.1\nDisableViaHeader Yes\nLogLevel Warning\nLogFile %q\nConnectPort %s\n",
		lport, filepath.Join(dir, "tinyproxy.log"), port), 0o600); err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "-d", "-c", conf)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	stop := func() { cmd.Process.Kill(); cmd.Wait() }
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			v, _ := exec.Command(bin, "-v").Output()
			return &proxyProc{url: "http://" + addr, version: strings.TrimSpace(string(v)), stop: stop}, nil
		}
		if time.Now().After(deadline) {
			stop()
			return nil, fmt.Errorf("tinyproxy not listening on %s: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond) // polling for the child's listen
	}
}
