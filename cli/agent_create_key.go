package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/client"
)

// createOutcomeWait bounds how long one create or action waits for an
// outcome the Hub could not tell yet. The Hub answers within its dispatch
// timeout (30 s by default) whatever the broker does; a broker whose
// runtime is slow (a Docker Engine busy with other containers, an image
// being pulled) may take several of those to finish.
const createOutcomeWait = 5 * time.Minute

// createOutcomePace is the pause between two asks for a pending outcome:
// the Hub answers a key whose command is still running at once.
const createOutcomePace = time.Second

// createKeyed checks the create req as the Hub will
// (api.CreateAgentRequest.Validate) and sends it under a fresh
// Idempotency-Key, asking again with it while the outcome is not known
// (awaitOutcome).
func createKeyed(cmd *cobra.Command, cl *client.Client, req api.CreateAgentRequest) (*api.Agent, error) {
	if err := validateInput(req.Validate()); err != nil { // the Hub's own check, before the create is sent
		return nil, err
	}
	return awaitOutcome(cmd, "creating agent "+req.Name, func(ctx context.Context) (*api.Agent, error) {
		return cl.CreateAgent(ctx, req)
	})
}

// actionKeyed runs the lifecycle action on an agent as createKeyed sends
// a create: under a key, asked again while the outcome is not known.
func actionKeyed(cmd *cobra.Command, cl *client.Client, agent, project, action string) (*api.Agent, error) {
	return awaitOutcome(cmd, action+" of agent "+agent, func(ctx context.Context) (*api.Agent, error) {
		return cl.AgentAction(ctx, agent, project, action)
	})
}

// awaitOutcome makes call under a fresh Idempotency-Key and, while the
// Hub answers that the broker has not answered yet
// (runtime_broker_timeout), makes it again with the same key: the Hub and
// the broker then never act twice, and the answer is the real outcome
// once the broker has it. That is what the Hub's message tells a caller
// to do; the CLI does it for the user, and says so once on stderr.
func awaitOutcome(cmd *cobra.Command, what string, call func(context.Context) (*api.Agent, error)) (*api.Agent, error) {
	// A first start may pull an image or clone a repository: past two
	// seconds, say what is being waited for.
	stop := slowNote(cmd.ErrOrStderr(), what+": waiting for the runtime broker (a first start may pull an image or clone the project)")
	defer stop()
	ctx := client.WithIdempotencyKey(cmd.Context(), client.NewIdempotencyKey())
	ag, err := call(ctx)
	if !api.IsCode(err, api.CodeBrokerTimeout) {
		return ag, err
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "the broker has not finished %s yet; waiting for its outcome (up to %v)\n", what, createOutcomeWait)
	wctx, cancel := context.WithTimeout(ctx, createOutcomeWait)
	defer cancel()
	for api.IsCode(err, api.CodeBrokerTimeout) {
		last := err // the Hub's own answer says how to learn the outcome later
		select {
		case <-wctx.Done():
			return nil, last
		case <-time.After(createOutcomePace):
		}
		if ag, err = call(wctx); err != nil && wctx.Err() != nil {
			return nil, last
		}
	}
	return ag, err
}
