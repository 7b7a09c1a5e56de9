package main

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"github.com/scion-go/scion/internal/testenv/proxy"
)

// proxyProc is a running tinyproxy and its version.
type proxyProc struct {
	url, version string
	stop         func()
}

// startProxy runs tinyproxy (internal/testenv/proxy) on a free loopback
// port, CONNECT allowed to port only.
func startProxy(dir, port string) (*proxyProc, error) {
	bin, err := proxy.Binary()
	if err != nil {
		return nil, err
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		return nil, err
	}
	pdir, err := os.MkdirTemp(dir, "tinyproxy")
	if err != nil {
		return nil, err
	}
	p, err := proxy.Launch(bin, pdir, n)
	if err != nil {
		return nil, err
	}
	v, err := exec.Command(bin, "-v").Output()
	if err != nil {
		p.Stop()
		return nil, fmt.Errorf("tinyproxy -v: %w", err)
	}
	return &proxyProc{url: p.URL, version: strings.TrimSpace(string(v)), stop: p.Stop}, nil
}
