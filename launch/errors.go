package launch

import (
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/config"
)

// usageError is a mistake in the command line or settings that the CLI
// reports as a usage error (exit 2): it has the Usage method cli.Daemons
// looks for.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// Usage reports that e is a usage error.
func (e *usageError) Usage() bool { return true }

func usageErr(err error) error { return &usageError{err} }

func usageErrorf(format string, args ...any) error { return usageErr(fmt.Errorf(format, args...)) }

// logOutput is where the daemons log (a test reads it).
var logOutput io.Writer = os.Stderr

func newLogger(level, format string) *slog.Logger {
	var l slog.Level
	_ = l.UnmarshalText([]byte(level))
	opts := &slog.HandlerOptions{Level: l}
	var h slog.Handler = slog.NewTextHandler(logOutput, opts)
	if format == config.LogFormatJSON {
		h = slog.NewJSONHandler(logOutput, opts)
	}
	return slog.New(api.RedactHandler(h))
}

// orDash is s, or "-" when s is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
