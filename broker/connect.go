package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/wire"
)

// connectPath is the Hub route of the control channel; it is also the path
// the upgrade request's signature covers.
const connectPath = "/api/v1/runtime-brokers/connect"

const (
	// dialTimeout bounds the WebSocket handshake, helloTimeout the hello.
	dialTimeout  = 15 * time.Second
	helloTimeout = 15 * time.Second
	// stableAfter is how long a session must last for the next reconnect
	// to start from MinBackoff again. Resetting on hello alone would let a
	// Hub that accepts and then drops every session make us redial ~20
	// times a second.
	stableAfter = 5 * time.Second
)

// connectURL turns the Hub endpoint into the control channel's URL.
func connectURL(endpoint string) (string, error) {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("broker: hub endpoint %q is not a URL", endpoint)
	}
	switch u.Scheme {
	case "http", "ws":
		u.Scheme = "ws"
	case "https", "wss":
		u.Scheme = "wss"
	default:
		return "", fmt.Errorf("broker: hub endpoint %q: scheme must be http, https, ws or wss", endpoint)
	}
	u.Path = strings.TrimRight(u.Path, "/") + connectPath
	u.RawPath, u.RawQuery, u.Fragment = "", "", ""
	return u.String(), nil
}

// connectLoop runs sessions back to back until ctx ends, waiting a jittered
// exponential backoff between them.
func (b *Broker) connectLoop(ctx context.Context) {
	attempt := 0
	for {
		up, err := b.session(ctx)
		if ctx.Err() != nil {
			return
		}
		if up >= stableAfter {
			attempt = 0
		}
		delay := backoffDelay(attempt, b.cfg.MinBackoff, b.cfg.MaxBackoff, rand.Float64())
		attempt++
		refused := ""
		if ae := refusal(err); ae != nil && b.cfg.RuntimeTarget != nil {
			// Not a failure a quick retry fixes: say so once, not at every
			// attempt, and ask again slowly.
			refused = ae.Code + ": " + ae.Message
			delay = refusedDelay(b.cfg.RefusedBackoff, rand.Float64())
			if refused != b.Status().Refused {
				b.log.Error(fmt.Sprintf("instance %s not activated: %s", b.cfg.InstanceKey, refused), "after", delay)
			} else {
				b.log.Debug("instance still not activated", "err", err, "after", delay)
			}
		} else {
			b.log.Warn("control channel down; reconnecting", "err", err, "after", delay)
		}
		b.update(func() { b.status.LastError, b.status.Refused = err.Error(), refused })
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// session runs one connection: dial, hello, then serve until the channel
// ends. It returns how long the session was up after its hello (0 if the
// hello never succeeded) and why it ended.
func (b *Broker) session(ctx context.Context) (up time.Duration, err error) {
	ws, err := b.dial(ctx)
	if err != nil {
		return 0, err
	}
	conn := wire.NewConn(ws, wire.Options{HeartbeatInterval: b.cfg.HeartbeatInterval, Grace: b.cfg.Grace})
	b.register(conn)
	// The Conn closes the channel cleanly itself when ctx ends.
	ended := make(chan error, 1)
	if err := conn.Start(ctx, func(reason error) { ended <- reason }); err != nil {
		_ = ws.CloseNow()
		return 0, err
	}

	reply, err := b.hello(ctx, conn)
	if err != nil {
		_ = conn.Close("hello failed")
		<-ended
		return 0, fmt.Errorf("hello: %w", err)
	}
	since := time.Now()
	b.log.Info("connected to hub", "hub", b.cfg.HubEndpoint, "session", reply.SessionID, "hubVersion", reply.HubVersion)
	b.update(func() {
		if !b.status.LastConnect.IsZero() {
			b.status.Reconnects++
		}
		b.conn = conn
		b.status.Connected, b.status.SessionID, b.status.LastConnect = true, reply.SessionID, since
		if b.status.Refused != "" {
			b.log.Info(fmt.Sprintf("instance %s activated", b.cfg.InstanceKey))
			b.status.Refused = ""
		}
	})
	if b.jobs != nil {
		b.jobsStarted.Do(func() { b.jobs.goJob(func() { b.jobsStartup(ctx) }) })
	}
	err = <-ended
	b.update(func() {
		b.conn = nil
		b.status.Connected, b.status.SessionID = false, ""
	})
	if err == nil {
		err = errors.New("control channel closed")
	}
	return time.Since(since), err
}

// dial opens the WebSocket with a signed upgrade request.
func (b *Broker) dial(ctx context.Context) (*websocket.Conn, error) {
	h := http.Header{}
	// connectURL sends no query string and the upgrade has no body.
	wire.SignHeaders(h, b.cfg.BrokerID, b.cfg.Secret, wire.SignedRequest{Method: http.MethodGet, Path: connectPath}, time.Now())
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	ws, resp, err := websocket.Dial(ctx, b.url, &websocket.DialOptions{
		HTTPClient:      b.cfg.HTTPClient,
		HTTPHeader:      h,
		CompressionMode: websocket.CompressionDisabled,
	})
	if err != nil {
		if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
			if ae := hubError(resp); ae != nil {
				return nil, fmt.Errorf("hub refused the control channel: %s: %w", resp.Status, ae)
			}
			if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusProxyAuthRequired {
				// Not the Hub's own refusal (it answers with its error
				// body): a guard in front of it, such as IAP.
				return nil, fmt.Errorf("hub refused the control channel: %s from something in front of the Hub (IAP or another proxy), not the Hub: "+
					"check this connection's transportMode and transportAudience (scion runtime-broker register --transport-mode, or SCION_TRANSPORT_MODE and SCION_TRANSPORT_AUDIENCE)", resp.Status)
			}
			return nil, fmt.Errorf("hub refused the control channel: %s", resp.Status)
		}
		return nil, fmt.Errorf("dial %s: %w", b.url, err)
	}
	return ws, nil
}

// hubError is the Hub's error in a refused upgrade's body, with the
// response's status, or nil when the body holds none.
func hubError(resp *http.Response) *api.Error {
	if resp.Body == nil {
		return nil
	}
	var eb api.ErrorBody
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if json.Unmarshal(data, &eb) != nil || eb.Error == nil {
		return nil
	}
	eb.Error.Status = resp.StatusCode
	return eb.Error
}

// hello introduces the broker. It fails if the inventory cannot be read:
// the Hub frees the slots of agents missing from it, so a hello with an
// empty inventory by mistake would orphan running agents.
func (b *Broker) hello(ctx context.Context, conn *wire.Conn) (wire.HelloReply, error) {
	ctx, cancel := context.WithTimeout(ctx, helloTimeout)
	defer cancel()
	var reply wire.HelloReply
	inv, err := b.inventory(ctx)
	if err != nil {
		return reply, err
	}
	h := wire.Hello{
		ProtocolVersion: wire.ProtocolVersion,
		BrokerID:        b.cfg.BrokerID,
		Name:            b.cfg.Name,
		Version:         b.cfg.Version,
		Runtime:         b.rt.Name(),
		Capabilities:    b.cfg.Capabilities,
		Profiles:        b.cfg.Profiles,
		RuntimeTarget:   b.cfg.RuntimeTarget,
		Inventory:       inv.Agents,
	}
	ws := b.WorkspaceStorage()
	h.WorkspaceStorage = &ws
	err = conn.Call(ctx, wire.MethodHello, h, &reply)
	return reply, err
}

// forwardEvents reports runtime events to the Hub as agent.status calls,
// in order. Events that happen while disconnected are dropped: the
// inventory in the next hello carries the state they would have told.
func (b *Broker) forwardEvents(ctx context.Context) {
	events := b.rt.Events()
	if events == nil {
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-events:
			if !ok {
				return
			}
			// The status is read even while disconnected: reading it
			// also gives an exited agent's ports back to the pool.
			cctx, cancel := context.WithTimeout(ctx, eventTimeout)
			st, err := b.currentStatus(cctx, ev.Status)
			cancel()
			if errors.Is(err, errAgentBusy) {
				// Not blocking the other agents' events behind this one.
				b.reportLater(ctx, ev.Status.AgentID)
				continue
			}
			if err != nil {
				b.log.Warn("runtime event not forwarded: the agent's state cannot be read", "agent", ev.Status.AgentID, "state", ev.Status.State, "err", err)
				continue
			}
			b.sendStatus(ctx, st)
		}
	}
}
