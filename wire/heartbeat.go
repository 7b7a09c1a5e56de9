package wire

import (
	"context"
	"fmt"
	"time"
)

// Heartbeats are two timers, not a goroutine, so an idle Conn costs no
// stack for them. The ping timer fires every HeartbeatInterval and sends a
// WebSocket ping; the pong (read by the read loop) counts as a sign of
// life, like any frame. The dead timer is set for LastSeen+Interval+Grace
// and, when it fires, either finds something newer arrived and re-arms for
// the new deadline, or closes the connection: detection happens exactly at
// Interval+Grace of silence, not up to a tick later.

func (c *Conn) startHeartbeat() {
	iv, limit := c.opts.HeartbeatInterval, c.opts.HeartbeatInterval+c.opts.Grace
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.reason != nil {
		return
	}
	c.pingT = time.AfterFunc(iv, c.ping)
	c.deadT = time.AfterFunc(time.Until(c.LastSeen().Add(limit)), c.checkDead)
}

func (c *Conn) ping() {
	c.mu.Lock()
	if c.reason != nil {
		c.mu.Unlock()
		return
	}
	c.pingT.Reset(c.opts.HeartbeatInterval)
	c.mu.Unlock()
	// Waiting for the pong is bounded by the dead deadline anyway; hctx
	// ends the wait when the Conn closes.
	ctx, cancel := context.WithTimeout(c.hctx, c.opts.HeartbeatInterval+c.opts.Grace)
	defer cancel()
	start := time.Now()
	if c.ws.Ping(ctx) == nil {
		c.touch()
		if f := c.opts.OnRTT; f != nil {
			f(time.Since(start))
		}
	}
}

func (c *Conn) checkDead() {
	limit := c.opts.HeartbeatInterval + c.opts.Grace
	last := c.LastSeen()
	if wait := time.Until(last.Add(limit)); wait > 0 {
		c.mu.Lock()
		if c.reason == nil {
			c.deadT.Reset(wait)
		}
		c.mu.Unlock()
		return
	}
	if c.shutdown(fmt.Errorf("%w: nothing from the peer for %v", ErrHeartbeatTimeout, time.Since(last).Round(time.Millisecond))) {
		// No close handshake: the peer is not listening.
		_ = c.ws.CloseNow()
	}
}
