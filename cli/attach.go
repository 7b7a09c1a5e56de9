package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/scion-go/scion/client"
)

// defaultDetachKeys is Docker's: Ctrl-P then Ctrl-Q. Ctrl-C is the
// agent's (an interactive harness stops its turn on it), so it cannot
// be the way out.
const defaultDetachKeys = "ctrl-p,ctrl-q"

func newAttachCmd(a *app) *cobra.Command {
	var project, detachKeys string
	c := &cobra.Command{
		Use:   "attach <name>",
		Short: "Attach your terminal to a running agent's main process",
		Long: `Connect your terminal to a running agent's main process through the Hub:
what you type goes to its standard input, what it prints comes back.

On a terminal, the terminal is put in raw mode, as the agent's own: every
key, Ctrl-C included, goes to the agent, and the agent's terminal follows
your window's size. Detach with the detach keys (default Ctrl-P Ctrl-Q,
--detach-keys to choose others); the agent keeps running.

From a pipe, the input is sent as it is, and its end (or Ctrl-C) detaches.`,
		Example: `  scion attach fixer
  scion attach fixer --detach-keys ctrl-],q
  echo "status" | scion attach fixer`,
		Args: exactArgs("name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			keys, err := parseDetachKeys(detachKeys)
			if err != nil {
				return usageErr(err)
			}
			_, cl, err := a.connect()
			if err != nil {
				return err
			}
			if f, ok := cmd.InOrStdin().(*os.File); ok && term.IsTerminal(int(f.Fd())) {
				return attachTerminal(cmd, cl, f, args[0], projectOrDefault(project), keys, detachKeys)
			}
			return attachPipe(cmd, cl, args[0], projectOrDefault(project))
		},
	}
	projectFlag(c, &project)
	c.Flags().StringVar(&detachKeys, "detach-keys", defaultDetachKeys, "the key sequence that detaches, comma-separated: ctrl-<a-z, @, [, \\, ], ^, _> or one character")
	return c
}

// parseDetachKeys reads --detach-keys: ctrl-<key> or single characters,
// comma-separated, as Docker takes them.
func parseDetachKeys(s string) ([]byte, error) {
	var out []byte
	for _, k := range strings.Split(s, ",") {
		k = strings.TrimSpace(k)
		switch {
		case strings.HasPrefix(strings.ToLower(k), "ctrl-") && len(k) == 6:
			c := k[5]
			switch {
			case c >= 'a' && c <= 'z':
				out = append(out, c-'a'+1)
			case c >= 'A' && c <= 'Z':
				out = append(out, c-'A'+1)
			case strings.IndexByte("@[\\]^_", c) >= 0:
				out = append(out, c-'@')
			default:
				return nil, fmt.Errorf("invalid --detach-keys %q: %q is not a control key", s, k)
			}
		case len(k) == 1:
			out = append(out, k[0])
		default:
			return nil, fmt.Errorf("invalid --detach-keys %q: use ctrl-<key> or one character, comma-separated", s)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("invalid --detach-keys %q: empty", s)
	}
	return out, nil
}

// errDetached ends the input when the detach keys were typed.
var errDetached = errors.New("detached")

// detachReader passes its input through until the detach sequence: the
// bytes of a sequence begun are held back until it is complete (then
// errDetached, and none of it is sent) or broken (then sent as typed).
type detachReader struct {
	r    io.Reader
	keys []byte
	held int // how many of keys were typed so far
	out  []byte
}

func (d *detachReader) Read(p []byte) (int, error) {
	for len(d.out) == 0 {
		buf := make([]byte, len(p))
		n, err := d.r.Read(buf)
		for _, b := range buf[:n] {
			switch {
			case b == d.keys[d.held]:
				d.held++
				if d.held == len(d.keys) {
					return copy(p, d.out), errDetached
				}
			case d.held > 0:
				d.out = append(d.out, d.keys[:d.held]...)
				d.held = 0
				if b == d.keys[0] {
					d.held = 1
				} else {
					d.out = append(d.out, b)
				}
			default:
				d.out = append(d.out, b)
			}
		}
		if err != nil {
			// The input ended mid-sequence: what was typed is sent.
			d.out = append(d.out, d.keys[:d.held]...)
			d.held = 0
			if len(d.out) == 0 {
				return 0, err
			}
			break
		}
	}
	n := copy(p, d.out)
	d.out = d.out[n:]
	return n, nil
}

// attachTerminal attaches a terminal in raw mode, following its size,
// until the detach keys, the agent's end or the Hub's.
func attachTerminal(cmd *cobra.Command, cl *client.Client, tty *os.File, name, project string, keys []byte, keyNames string) error {
	ctx, cancel := context.WithCancel(cmd.Context())
	defer cancel()
	at, err := cl.Attach(ctx, name, project)
	if err != nil {
		return err
	}
	defer at.Close()
	fd := int(tty.Fd())
	old, err := term.MakeRaw(fd)
	if err != nil {
		return fmt.Errorf("terminal: %w", err)
	}
	defer func() { _ = term.Restore(fd, old) }()
	errw := cmd.ErrOrStderr()
	// Raw mode: a line ends with \r\n of our own.
	fmt.Fprintf(errw, "attached to %s; %s detaches\r\n", name, strings.ToUpper(strings.ReplaceAll(keyNames, ",", " ")))

	resize := func() {
		if w, h, err := term.GetSize(fd); err == nil && w > 0 && h > 0 {
			_ = at.Resize(uint16(h), uint16(w))
		}
	}
	resize()
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	defer signal.Stop(winch)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-winch:
				resize()
			}
		}
	}()

	inDone := make(chan error, 1)
	go func() {
		_, err := io.Copy(at, &detachReader{r: tty, keys: keys})
		inDone <- err
	}()
	outDone := make(chan error, 1)
	go func() { _, err := io.Copy(cmd.OutOrStdout(), at); outDone <- err }()
	select {
	case err = <-outDone: // the agent exited or the Hub closed
	case err = <-inDone:
		if errors.Is(err, errDetached) {
			err = nil
		}
	case <-ctx.Done():
		err = nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
		err = nil
	}
	fmt.Fprintf(errw, "\r\ndetached from %s\r\n", name)
	return err
}

// attachPipe attaches non-terminal input: sent as it is; its end, or
// Ctrl-C, detaches (after a moment for the agent's answer).
func attachPipe(cmd *cobra.Command, cl *client.Client, name, project string) error {
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
	defer stop()
	at, err := cl.Attach(ctx, name, project)
	if err != nil {
		return err
	}
	defer at.Close()
	fmt.Fprintf(cmd.ErrOrStderr(), "attached to %s; the end of input or Ctrl-C detaches\n", name)
	inDone := make(chan error, 1)
	go func() {
		_, err := io.Copy(at, cmd.InOrStdin())
		if err == nil {
			err = at.CloseWrite()
		}
		inDone <- err
	}()
	outDone := make(chan error, 1)
	go func() { _, err := io.Copy(cmd.OutOrStdout(), at); outDone <- err }()
	select {
	case err = <-outDone: // the agent exited or the Hub closed
	case <-inDone:
		// End of input (a pipe): give the agent a moment to answer
		// what it was sent, then detach.
		select {
		case err = <-outDone:
		case <-time.After(attachLinger):
		case <-ctx.Done():
		}
	case <-ctx.Done():
		err = nil
	}
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "detached from %s\n", name)
	return err
}
