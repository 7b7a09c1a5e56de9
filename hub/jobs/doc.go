// Package jobs is the Hub's room of delegated Jobs (ADR-0046): the ledger
// of the Jobs an agent's broker runs on spoke clusters, the way in to
// them, and the broker-scoped secrets those brokers open their spokes
// with. The routes are listed in api/jobs.go; run is in run.go, cancel
// and the cancels a broker could not take at once in cancel.go, the
// broker's job.update in update.go, an agent's Jobs ended with it in
// agent.go, the broker secrets in broker_secrets.go.
//
// Who may: every Job route needs agent.lifecycle on the Job's agent (an
// agent for itself, a user or agent allowed to act on it). A Job the
// caller cannot reach is answered 404 job_not_found, like an unknown one,
// so Job IDs tell nothing. A Job whose agent record is gone (the ledger is
// history) is judged as an agent of its project created by whoever ran
// the Job: that user, the project's owner and admins keep it.
//
// GET /api/v1/jobs needs ?agent= (agent.lifecycle on it) or ?project=
// (agent.lifecycle on every agent of it: an admin, the project's owner or
// a token of theirs with the lifecycle scope, a coordinator agent of the
// project). With neither, an agent lists its own Jobs and anyone else
// needs to be a hub admin (every Job).
//
// Imports. Of ours: api (the wire types and error codes), hub/authz (the
// rules a Job's caller is judged by), hub/authstore (a broker's read of
// its own secret runs as that broker), hub/httpapi (routes, handler
// shapes, bodies, errors, the check mark), hub/plan (the cancel's plan,
// plan.Reach, what a lost answer is), hub/storeerr (store errors as the
// API's), store (the ledger, through the Hub's authorizing wrapper) and
// wire (the broker's Job methods). Never the hub package: Go forbids the
// cycle, and the room must not reach the Server's internals. What it
// needs of the Hub around it (the control channel to brokers, agents
// loaded with their authorization, the offline dispatch queue, the
// broker's signed authentication, the sealing box, the Hub's own context
// and background work) it takes as the small interface Hub, which the hub
// package implements over its Server.
package jobs
