package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/spf13/cobra"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/cli/show"
)

// Exit codes.
const (
	exitError = 1
	exitUsage = 2
)

// usageError is a mistake in the command line itself (a bad flag value, a
// missing argument): it exits 2 and points at --help, unlike an error that
// the Hub or the local files returned.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usageErr(err error) error { return &usageError{err} }

// exitCodeError makes scion exit with a remote command's exit code
// (`scion exec`), printing nothing more.
type exitCodeError struct{ code int }

func (e *exitCodeError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

func usageErrorf(format string, args ...any) error { return usageErr(fmt.Errorf(format, args...)) }

// cobraUsagePrefixes are the messages of errors cobra raises itself without
// going through our flag error func or Args validators (for example in its
// built-in help and completion commands).
var cobraUsagePrefixes = []string{"unknown command", "unknown flag", "unknown shorthand flag",
	"invalid argument", "accepts ", "requires at least", "requires at most", "required flag"}

func isUsage(err error) bool {
	var ue *usageError
	if errors.As(err, &ue) {
		return true
	}
	// A daemon's usage error (see Daemons).
	var du interface{ Usage() bool }
	if errors.As(err, &du) && du.Usage() {
		return true
	}
	for _, p := range cobraUsagePrefixes {
		if strings.HasPrefix(err.Error(), p) {
			return true
		}
	}
	return false
}

// reportError prints err as `error: <code>: <message>` for a Hub error
// (with its HTTP status after it for a 5xx: the Hub's side failed, and the
// status says whether a retry may help) or `error: <message>` for a local
// one, and returns the exit code.
func reportError(w io.Writer, cmd *cobra.Command, err error) int {
	w = redactingWriter{w}
	var ce *exitCodeError
	if errors.As(err, &ce) { // a remote command's own exit code: no message
		return ce.code
	}
	if structuredOutput(cmd) {
		e := errorJSON(err)
		_ = show.JSON(w, map[string]any{"error": e})
		return e.ExitCode
	}
	if isUsage(err) {
		fmt.Fprintf(w, "error: %s\nRun '%s --help' for usage.\n", err, cmd.CommandPath())
		return exitUsage
	}
	var ae *api.Error
	var ue *url.Error
	switch {
	case errors.As(err, &ae):
		fmt.Fprintf(w, "error: %s: %s%s\n", ae.Code, ae.Message, statusNote(ae))
		printErrorDetails(w, ae)
		// The Hub's side failed: its admin finds the request in the
		// access log by this ID. (A refusal's message says it all; -o
		// json gives every error's ID.)
		if ae.RequestID != "" && ae.Status >= 500 {
			fmt.Fprintf(w, "Request ID: %s (in the Hub's access log)\n", ae.RequestID)
		}
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(w, "error: interrupted")
	case errors.As(err, &ue):
		// Name the Hub plainly; the raw url.Error repeats method and URL.
		host := ue.URL
		if u, perr := url.Parse(ue.URL); perr == nil {
			host = u.Scheme + "://" + u.Host
		}
		fmt.Fprintf(w, "error: cannot reach the Hub at %s: %v\n", host, ue.Err)
	default:
		fmt.Fprintf(w, "error: %s\n", err)
	}
	return exitError
}

// redactingWriter redacts the userinfo of every URL in what is written
// (api.RedactURLs): an error may quote a settings or fleet file's URL with
// its password, from our code or a library's.
type redactingWriter struct{ w io.Writer }

func (r redactingWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(r.w, api.RedactURLs(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// statusNote is " (HTTP 501)" for a Hub error of a 5xx status, empty for
// any other: a 4xx is the request's fault and its code says all.
func statusNote(ae *api.Error) string {
	if ae.Status < 500 {
		return ""
	}
	return fmt.Sprintf(" (HTTP %d)", ae.Status)
}

// printErrorDetails prints the lists a Hub error carries in its details
// that the user needs to act on it: the brokers to choose from, the
// agents that block a deregistration.
func printErrorDetails(w io.Writer, ae *api.Error) {
	if names := detailStrings(ae.Details["brokers"]); len(names) > 0 {
		if ae.Code == api.CodeMultipleBrokers {
			fmt.Fprintf(w, "Choose one with --broker: %s\n", strings.Join(names, ", "))
		} else {
			fmt.Fprintf(w, "Runtime brokers: %s\n", strings.Join(names, ", "))
		}
	}
	if agents := detailStrings(ae.Details["agents"]); len(agents) > 0 {
		line := strings.Join(agents, ", ")
		if total, ok := ae.Details["total"].(float64); ok && int(total) > len(agents) {
			line += fmt.Sprintf(" (and %d more)", int(total)-len(agents))
		}
		fmt.Fprintf(w, "Agents: %s\n", line)
	}
}

// detailStrings reads a list of strings from decoded JSON details; nil for
// anything else.
func detailStrings(v any) []string {
	switch l := v.(type) {
	case []string:
		return l
	case []any:
		out := make([]string, 0, len(l))
		for _, x := range l {
			s, ok := x.(string)
			if !ok {
				return nil
			}
			out = append(out, s)
		}
		return out
	}
	return nil
}
