package client

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
)

// maxEventLine bounds one line of the event stream (a list of agents).
const maxEventLine = 16 << 20

// Event is one server-sent event of GET /api/v1/events: its name and its
// JSON data (see the Hub's docs/web.md for the names).
type Event struct {
	Name string
	Data json.RawMessage
}

// Events names of the stream.
const (
	EventAgent     = "agent"      // one agent (api.Agent)
	EventAgentGone = "agent-gone" // {"id"} of an agent shown before
	EventAgents    = "agents"     // every agent again ([]api.Agent)
	EventBrokers   = "brokers"    // []api.RuntimeBroker
	EventProjects  = "projects"   // []api.Project
	EventResync    = "resync"     // events were dropped: read everything again
)

// EventStream reads the Hub's live feed of changes, as the caller may
// see them.
type EventStream struct {
	body io.ReadCloser
	sc   *bufio.Scanner
}

// Events opens GET /api/v1/events.
func (c *Client) Events(ctx context.Context) (*EventStream, error) {
	resp, err := c.send(ctx, request{method: http.MethodGet, path: apiPath("events"), accept: "text/event-stream"})
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), maxEventLine)
	return &EventStream{body: resp.Body, sc: sc}, nil
}

// Next is the next event (keep-alive comments skipped); io.EOF when the
// stream ended.
func (s *EventStream) Next() (Event, error) {
	var ev Event
	for s.sc.Scan() {
		line := s.sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			ev.Name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			ev.Data = json.RawMessage(strings.TrimPrefix(line, "data: "))
		case line == "" && ev.Name != "":
			return ev, nil
		}
	}
	if err := s.sc.Err(); err != nil {
		return Event{}, err
	}
	return Event{}, io.EOF
}

// Close ends the stream.
func (s *EventStream) Close() error { return s.body.Close() }

// AgentGone is an agent-gone event's data.
type AgentGone struct {
	ID string `json:"id"`
}
