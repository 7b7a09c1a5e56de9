// Sending a committed agent's create to its broker, and what its outcome
// leaves behind: a created agent, a refused one (phase error, nothing on
// the broker, its name free for the next create), or one whose outcome is
// not known yet (the broker went away with the command unanswered).

package hub

import (
	"context"
	"errors"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/plan"
	"github.com/scion-go/scion/store"
	"github.com/scion-go/scion/wire"
)

// createOutcome is what a create's answer from the broker says happened.
type createOutcome int

const (
	// outcomeCreated: the broker made the agent.
	outcomeCreated createOutcome = iota
	// outcomeRefused: the broker answered with an error; it undoes a
	// failed create, so nothing of the agent is left on it.
	outcomeRefused
	// outcomeExists: the broker already has the agent (a create sent
	// again after its first answer was lost, or a start re-creating an
	// agent that turns out to be there).
	outcomeExists
	// outcomeUnknown: no answer (the channel went away, the broker is
	// offline, the deadline passed): the broker may or may not have acted.
	outcomeUnknown
)

// classifyCreate reads the error of a create's dispatch.
func classifyCreate(derr error) createOutcome {
	if derr == nil {
		return outcomeCreated
	}
	var e *api.Error
	if !errors.As(derr, &e) {
		return outcomeUnknown // the request's own context ended
	}
	switch e.Code {
	case api.CodeBrokerUnavailable, api.CodeBrokerOffline, api.CodeBrokerTimeout:
		return outcomeUnknown
	case api.CodeAlreadyExists:
		return outcomeExists
	}
	return outcomeRefused
}

// createUnresolved reports whether the outcome of a's create is still
// open: no answer came (phase provisioning, see awaitCreateOutcome), or it
// came as the absence of the agent (plan.NoContainer). A keyed retry of the
// create then asks the broker again.
func createUnresolved(a *store.Agent) bool {
	return (a.Phase == api.PhaseProvisioning && a.ContainerStatus == "") || plan.NoContainer(a)
}

// createSpec is the broker's create command for agent a of project p.
// Kubernetes settings are not kept in the record: only the request that
// asked for them passes them on.
func (s *Server) createSpec(a *store.Agent, p *store.Project, secrets, kubernetes map[string]string, start bool) wire.AgentSpec {
	return wire.AgentSpec{AgentID: a.ID, Slug: a.Slug, ProjectID: p.ID, ProjectName: p.Name, RunID: a.RunID,
		Generation: a.Generation, Harness: a.Harness, Image: a.Image, Command: a.Command, Env: a.Env,
		Ports: a.Ports, Profile: a.Profile, Pin: clonePin(a.Pin), SharingMode: p.SharingMode, GitRemote: p.GitRemote,
		AgentToken: s.id.MintAgentToken(a), Secrets: secrets, Kubernetes: kubernetes, HubURL: s.opts.PublicURL, Start: start, Payload: a.Payload,
		PersistentHome: s.nfsHome(), GlobalProject: p.Name == api.GlobalProject}
}

// nfsHome reports whether the hub.k8s_nfs_home experiment is on (off when
// the settings cannot be read: an agent then gets the home it would
// without it).
func (s *Server) nfsHome() bool {
	on, err := s.experimentOn(s.systemCtx(), api.ExperimentK8sNFSHome)
	return err == nil && on
}

// runCreate sends the create of the committed agent a to broker b under
// key and records the outcome. a is the record as the caller wrote it (it
// is given up). It returns the agent as recorded and the error to answer
// with: the broker's refusal, or for an unknown outcome a 503 that says a
// retry learns the outcome. An unknown outcome leaves the agent
// provisioning with its slot (awaitCreateOutcome), for the broker's next
// inventory (or settleLater) to settle.
func (s *Server) runCreate(ctx context.Context, a *store.Agent, b *store.Broker, spec wire.AgentSpec, key string) (*store.Agent, createOutcome, error) {
	s.inflight.add(a.ID)
	var st wire.AgentStatus
	derr := s.disp.Dispatch(ctx, b.ID, wire.MethodAgentCreate, spec, &st, key)
	out := classifyCreate(derr)
	wctx := context.WithoutCancel(ctx)
	if out == outcomeExists {
		// The broker has it: what it is doing is the outcome.
		if derr = s.disp.Dispatch(wctx, b.ID, wire.MethodAgentInspect, wire.AgentRef{AgentID: a.ID, RunID: a.RunID}, &st, ""); derr != nil {
			out = outcomeUnknown
		}
	}
	var err error
	if out == outcomeUnknown {
		s.log.Warn("create unanswered: its outcome is settled when the broker reports the agent, or by a keyed retry",
			"agent_id", a.ID, "broker_id", b.ID, "err", derr)
		if a, err = s.awaitCreateOutcome(wctx, a, derr); err == nil {
			err = unresolvedError(b, derr)
		}
	} else {
		// Created (or there already), or refused: then in phase error
		// with the broker's reason.
		if a, err = s.afterDispatchFrom(wctx, spec.AgentID, a, st, derr, spec.Start); err == nil {
			err = derr
		}
	}
	if s.inflight.done(spec.AgentID) && out == outcomeUnknown {
		// The reconnect's reconciliation skipped it while in flight.
		s.settleLater(spec.AgentID, b.ID)
	}
	return a, out, err
}

// unresolvedError is the answer to a create whose outcome is not known,
// with the code of what happened (the broker offline, the channel lost,
// the deadline passed). Its message is the Hub's own, not the
// transport's: it names no address.
func unresolvedError(b *store.Broker, derr error) error {
	code := api.AsError(derr).Code
	if code == api.CodeInternal { // the request's own context ended
		code = api.CodeBrokerUnavailable
	}
	return api.Errorf(code,
		"runtime broker %q did not answer the create; the agent's outcome is known when the broker reports it: retry with the same %s to learn it",
		b.Name, api.HeaderIdempotencyKey).WithDetail("broker", b.Name)
}

// recreation is what a start needs to create again an agent its broker
// holds nothing of: its project and the values of the secrets it names.
// It is decided before the start takes a slot, so a refused one takes
// none.
type recreation struct {
	project *store.Project
	secrets map[string]string
}

// prepareRecreate decides whether c may create agent a again (its
// secrets are handed over again: see recordedSecrets).
func (s *Server) prepareRecreate(ctx context.Context, c *Caller, a *store.Agent) (*recreation, error) {
	p, err := s.store.GetProject(ctx, a.ProjectID)
	if err != nil {
		return nil, err
	}
	secrets, err := s.recordedSecrets(ctx, c, p, a)
	if err != nil {
		return nil, err
	}
	return &recreation{project: p, secrets: secrets}, nil
}

// recreate is a start, restart or resume of agent a, which its broker
// holds nothing of (plan.NoContainer), holding its slot already: the create is
// sent again, with start, under a key of this action's own (the broker
// remembers the answer of the refused create under the create's key).
// done is false when the broker turns out to have the agent after all:
// the action is then dispatched as usual.
func (s *Server) recreate(ctx context.Context, a *store.Agent, b *store.Broker, key string, rc *recreation) (_ *store.Agent, done bool, _ error) {
	a, err := s.reprovision(ctx, a, b, false)
	if err != nil {
		return nil, true, err
	}
	s.log.Info("start, restart or resume creates again an agent its broker holds nothing of", "agent_id", a.ID, "broker_id", b.ID)
	// An agent that ran before keeps the workspace its broker recorded
	// (a container removed by hand, a reincarnation the broker refused):
	// only one that never ran gets a fresh one.
	spec := s.createSpec(a, rc.project, rc.secrets, nil, true)
	spec.KeepWorkspace = a.WorkspacePlacement != ""
	// One on the export that this broker has no record of (a move cut
	// short after its assignment) is confirmed there, never made anew.
	spec.ConfirmWorkspace = a.WorkspacePlacement == api.PlacementExport
	a, out, err := s.runCreate(ctx, a, b, spec, "create:"+a.RunID+":"+key)
	if out == outcomeExists && err == nil && a.Phase != api.PhaseRunning {
		return a, false, nil
	}
	return a, true, err
}

// reprovision readies an agent the broker holds nothing of for its create
// to be sent again: phase provisioning, and with start, the slot it runs
// in (the quota decides, as for any start).
func (s *Server) reprovision(ctx context.Context, a *store.Agent, b *store.Broker, start bool) (*store.Agent, error) {
	if start {
		limit, err := s.brokerLimit(ctx, b)
		if err == nil {
			switch err = s.store.Reserve(ctx, b.ID, a.ID, limit); {
			case errors.Is(err, store.ErrQuota):
				err = plan.QuotaError(b, limit)
			case errors.Is(err, store.ErrReservationScope):
				err = plan.ReservationScopeError(a, b)
			case isNotFound(err):
				err = s.slotNotFound(ctx, a)
			}
		}
		if err != nil {
			return nil, err
		}
	}
	return s.mutateAgentFrom(ctx, a.ID, a, func(x *store.Agent) error {
		x.Phase, x.ContainerStatus, x.StatusMessage, x.PortMappings = api.PhaseProvisioning, "", "", nil
		return nil
	})
}
