package launch

import (
	"context"
	"io"
	"log/slog"
	"net"
	"sync"
)

// forwardToHub listens on addr (a Docker network's gateway address) and
// pipes every connection to the Hub at target. Agents on that network
// reach a loopback-only Hub through it, while the Hub itself keeps
// listening on loopback only; nothing outside the host can reach addr,
// which exists only on the host's side of the agents' bridge.
func forwardToHub(ctx context.Context, addr, target string, log *slog.Logger) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", err
	}
	go func() {
		<-ctx.Done()
		_ = ln.Close()
	}()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				if ctx.Err() == nil {
					log.Error("hub forwarder stopped", "addr", addr, "err", err)
				}
				return
			}
			go pipe(ctx, c, target, log)
		}
	}()
	return ln.Addr().String(), nil
}

func pipe(ctx context.Context, c net.Conn, target string, log *slog.Logger) {
	defer c.Close()
	var d net.Dialer
	up, err := d.DialContext(ctx, "tcp", target)
	if err != nil {
		log.Warn("hub forwarder: dial", "target", target, "err", err)
		return
	}
	defer up.Close()
	var wg sync.WaitGroup
	wg.Add(2)
	half := func(dst, src net.Conn) {
		defer wg.Done()
		_, _ = io.Copy(dst, src)
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
	}
	go half(up, c)
	go half(c, up)
	wg.Wait()
}
