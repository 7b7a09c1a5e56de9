package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/coder/websocket"

	"github.com/scion-go/scion/api"
)

// Exec runs a command in a running agent. Its output is written to stdout
// and stderr as it arrives; the command's exit code is returned.
func (c *Client) Exec(ctx context.Context, agent, project string, req api.ExecRequest, stdout, stderr io.Writer) (int, error) {
	s, err := segment("agent", agent)
	if err != nil {
		return 0, err
	}
	resp, err := c.send(ctx, request{method: http.MethodPost, path: apiPath("agents", s, "exec"), query: agentQuery(project), body: req, accept: "application/x-ndjson"})
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		var out api.ExecOutput
		if err := json.Unmarshal(sc.Bytes(), &out); err != nil {
			return 0, fmt.Errorf("client: bad exec output: %w", err)
		}
		switch out.Stream {
		case "stdout":
			if stdout != nil {
				if _, err := stdout.Write(out.Data); err != nil {
					return 0, err
				}
			}
		case "stderr":
			if stderr != nil {
				if _, err := stderr.Write(out.Data); err != nil {
					return 0, err
				}
			}
		case "exit":
			if out.ExitCode == nil {
				return 0, errors.New("client: exec ended without an exit code")
			}
			return *out.ExitCode, nil
		case "error":
			if out.Error != nil {
				return 0, out.Error
			}
			return 0, errors.New("client: exec failed")
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, errors.New("client: exec stream ended without an exit code")
}

// Attachment is a live connection to an agent's main process.
type Attachment struct {
	ws  *websocket.Conn
	ctx context.Context
	buf []byte
}

// Attach connects to an agent's main process through the Hub. Read returns
// its output (io.EOF when the agent exits or the Hub closes), Write sends
// its stdin. Close detaches; the agent keeps running.
func (c *Client) Attach(ctx context.Context, agent, project string) (*Attachment, error) {
	s, err := segment("agent", agent)
	if err != nil {
		return nil, err
	}
	u := c.base + apiPath("agents", s, "attach")
	if q := agentQuery(project); len(q) > 0 {
		u += "?" + q.Encode()
	}
	u = "ws" + strings.TrimPrefix(u, "http")
	h := http.Header{}
	if c.token != "" {
		h.Set("Authorization", "Bearer "+c.token)
	}
	h.Set("User-Agent", c.userAgent)
	ws, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPHeader: h, HTTPClient: c.hc, CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		if resp != nil && resp.StatusCode >= 400 {
			return nil, decodeError(resp)
		}
		return nil, err
	}
	ws.SetReadLimit(1 << 20)
	return &Attachment{ws: ws, ctx: ctx}, nil
}

func (a *Attachment) Read(p []byte) (int, error) {
	for len(a.buf) == 0 {
		typ, data, err := a.ws.Read(a.ctx)
		if err != nil {
			if websocket.CloseStatus(err) == websocket.StatusNormalClosure {
				return 0, io.EOF
			}
			return 0, err
		}
		if typ == websocket.MessageBinary {
			a.buf = data
		}
	}
	n := copy(p, a.buf)
	a.buf = a.buf[n:]
	return n, nil
}

func (a *Attachment) Write(p []byte) (int, error) {
	if err := a.ws.Write(a.ctx, websocket.MessageBinary, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (a *Attachment) control(c api.AttachControl) error {
	b, _ := json.Marshal(c)
	return a.ws.Write(a.ctx, websocket.MessageText, b)
}

// CloseWrite signals the end of input.
func (a *Attachment) CloseWrite() error { return a.control(api.AttachControl{CloseWrite: true}) }

// Resize changes the agent's terminal size.
func (a *Attachment) Resize(rows, cols uint16) error {
	return a.control(api.AttachControl{Rows: rows, Cols: cols})
}

// Close detaches.
func (a *Attachment) Close() error { return a.ws.Close(websocket.StatusNormalClosure, "detach") }
