package cli

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	"github.com/spf13/cobra"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/cli/show"
)

// The CLI's own error codes, for errors that did not come from a Hub
// (whose codes are the API's): under -o json a script tells them apart
// by code, as it does the Hub's.
const (
	codeUsage       = api.CodeInvalidRequest // the command line: exit 2
	codeUnreachable = "hub_unreachable"      // no answer from the Hub
	codeInterrupted = "interrupted"          // Ctrl-C, SIGTERM
	codeLocal       = "error"                // anything else on this side
)

// errorView is an error as -o json prints it on stderr, inside
// {"error": ...}: the Hub's code, message and details as the Hub sent
// them, the HTTP status and request ID of its answer, and the exit code.
type errorView struct {
	Code      string         `json:"code"`
	Message   string         `json:"message"`
	Details   map[string]any `json:"details,omitempty"`
	Status    int            `json:"status,omitempty"`
	RequestID string         `json:"requestId,omitempty"`
	ExitCode  int            `json:"exitCode"`
}

// errorJSON is err's errorView, with reportError's exit codes.
func errorJSON(err error) errorView {
	if isUsage(err) {
		return errorView{Code: codeUsage, Message: err.Error(), ExitCode: exitUsage}
	}
	var ae *api.Error
	var ue *url.Error
	switch {
	case errors.As(err, &ae):
		return errorView{Code: ae.Code, Message: ae.Message, Details: ae.Details, Status: ae.Status, RequestID: ae.RequestID, ExitCode: exitError}
	case errors.Is(err, context.Canceled):
		return errorView{Code: codeInterrupted, Message: "interrupted", ExitCode: exitError}
	case errors.As(err, &ue):
		host := ue.URL
		if u, perr := url.Parse(ue.URL); perr == nil {
			host = u.Scheme + "://" + u.Host
		}
		return errorView{Code: codeUnreachable, Message: fmt.Sprintf("cannot reach the Hub at %s: %v", host, ue.Err), ExitCode: exitError}
	}
	return errorView{Code: codeLocal, Message: err.Error(), ExitCode: exitError}
}

// structuredOutput reports whether the command ran with a structured -o
// (json, yaml, jsonpath, go-template): its errors go to stderr as JSON.
// A flag that did not parse counts as the table.
func structuredOutput(cmd *cobra.Command) bool {
	fl := cmd.Flags().Lookup("output")
	if fl == nil {
		fl = cmd.Root().PersistentFlags().Lookup("output")
	}
	if fl == nil {
		return false
	}
	f, err := show.ParseFormat(fl.Value.String())
	return err == nil && f.Structured()
}
