package api

// The Hub's REST routes. {project}, {broker} and {agent} accept an ID or a
// name (an agent slug needs ?project=). Every route but /healthz, /readyz,
// POST /runtime-brokers/join and the sign-in routes /auth/device (see
// auth.go) needs a caller (/metrics its own, see access.go):
//
//	Authorization: Bearer <user or agent token>
//
// or, for a broker, the signed headers below.
//
//	GET    /healthz  /readyz
//	GET    /metrics  (a scrape token or a Hub admin's token: see access.go)
//	GET    /api/v1/auth/whoami                          -> Whoami
//	POST   /api/v1/auth/agent-token                     -> AgentToken (an agent renews its own token; see agent_token.go)
//	POST   /api/v1/auth/device                          -> DeviceAuthorization (no caller; OIDC sign-in)
//	POST   /api/v1/auth/device/token                    DeviceTokenRequest -> SignIn (no caller)
//	POST   /api/v1/projects                             CreateProjectRequest -> Project (201)
//	GET    /api/v1/projects?cursor=&limit=              -> List[Project]
//	GET    /api/v1/projects/{project}                   -> Project
//	PATCH  /api/v1/projects/{project}                   UpdateProjectRequest -> Project
//	DELETE /api/v1/projects/{project}?force=            -> ProjectDeleted (409 while it has agents; force=true removes their records first, with best-effort runtime deletes)
//	POST   /api/v1/runtime-brokers                      RegisterBrokerRequest -> BrokerCredentials (201; register as the signed-in user)
//	POST   /api/v1/runtime-brokers/join                 RegisterBrokerRequest{joinToken} -> BrokerCredentials (201; no bearer)
//	POST   /api/v1/runtime-brokers/join-tokens          CreateJoinTokenRequest -> JoinToken (201; admin)
//	GET    /api/v1/runtime-brokers?cursor=&limit=       -> List[RuntimeBroker]
//	GET    /api/v1/runtime-brokers/connect              WebSocket control channel (signed broker headers)
//	GET    /api/v1/runtime-brokers/{broker}             -> RuntimeBroker
//	PATCH  /api/v1/runtime-brokers/{broker}             UpdateBrokerRequest -> RuntimeBroker
//	DELETE /api/v1/runtime-brokers/{broker}[?force=true] (204; deregister; 409 runtime_broker_has_agents without force while agents remain)
//	PUT    /api/v1/runtime-brokers/{broker}/projects/{project}   (provide) -> RuntimeBroker
//	DELETE /api/v1/runtime-brokers/{broker}/projects/{project}   (withdraw) -> RuntimeBroker
//	POST   /api/v1/agents                               CreateAgentRequest -> Agent (201)
//	GET    /api/v1/agents?project=&broker=&phase=&cursor=&limit= -> List[Agent]
//	GET    /api/v1/agents/{agent}                       -> Agent
//	PATCH  /api/v1/agents/{agent}                       UpdateAgentRequest -> Agent (role change)
//	DELETE /api/v1/agents/{agent}[?force=true]          (204; force removes the record of an agent whose broker is gone: 409 runtime_broker_missing without it)
//	POST   /api/v1/agents/{agent}/start|stop|restart|suspend|resume -> Agent
//	POST   /api/v1/agents/{agent}/reincarnate           ReincarnateRequest -> MovePlan (a move's dry run; see moves.go)
//	GET    /api/v1/agents/{agent}/logs?follow=true&tail=N  -> text/plain stream of the agent's output
//	POST   /api/v1/agents/{agent}/exec                  ExecRequest -> application/x-ndjson of ExecOutput
//	GET    /api/v1/agents/{agent}/attach                WebSocket: binary = bytes both ways, text = AttachControl
//	POST   /api/v1/agents/{agent}/jobs                  JobRunRequest -> Job (201; a delegated Job, see jobs.go)
//	GET    /api/v1/agents/{agent}/jobs?cursor=&limit=   -> List[Job]
//	GET    /api/v1/jobs?project=&agent=&cursor=&limit=  -> List[Job]
//	GET    /api/v1/jobs/{job}                           -> Job (404 job_not_found for one the caller cannot reach)
//	GET    /api/v1/jobs/{job}/logs                      -> text/plain (the latest log snapshot)
//	GET    /api/v1/jobs/{job}/trace                     -> application/octet-stream (404 when none)
//	POST   /api/v1/jobs/{job}/cancel                    -> Job (409 invalid_phase once finished; a cancelled one as it is)
//	PUT    /api/v1/runtime-brokers/{broker}/secrets/{name}       PutSecretRequest -> BrokerSecret (admin)
//	GET    /api/v1/runtime-brokers/{broker}/secrets              -> List[BrokerSecret] (admin; names only)
//	DELETE /api/v1/runtime-brokers/{broker}/secrets/{name}       (204; admin)
//	GET    /api/v1/runtime-brokers/{broker}/secrets/{name}/value -> BrokerSecretValue (that broker's signed headers only; no bearer)
//	GET    /api/v1/settings                             -> HubSettings (ETag: "<version>")
//	PUT    /api/v1/settings                             HubSettingsUpdate -> HubSettings (admin; partial; If-Match: "<version>" or 412 precondition_failed)
//	GET    /api/v1/admin/limits                         -> Limits
//	PUT    /api/v1/admin/limits                         Limits -> Limits (admin)
//
// Users, access tokens and secrets are listed in access.go. Who may call
// what is hub/authz's (docs/permissions.md); hub/authz_matrix_test.go
// holds the expected answer of every route for every kind of caller.
//
// Mutating calls accept an Idempotency-Key header.
const (
	HeaderBrokerID        = "X-Scion-Broker-ID"
	HeaderBrokerTimestamp = "X-Scion-Timestamp"
	HeaderBrokerNonce     = "X-Scion-Nonce"
	HeaderBrokerSignature = "X-Scion-Signature"
	HeaderIdempotencyKey  = "Idempotency-Key"
	// HeaderRequestID names a request in the Hub's access log: the Hub
	// sends it back on every answer (and keeps a client's own, when it
	// is a plain token of at most 64 characters).
	HeaderRequestID = "X-Request-Id"
)

// Environment variables the CLI reads inside an agent container.
const (
	EnvHubEndpoint = "SCION_HUB_ENDPOINT"
	EnvHubURL      = "SCION_HUB_URL"
	// EnvHubCA is a PEM file of the CA that signed the Hub's TLS
	// certificate, for a Hub named by SCION_HUB_ENDPOINT or SCION_HUB_URL
	// under a private CA (hub list entries keep theirs as hubs.<name>.ca).
	EnvHubCA      = "SCION_HUB_CA"
	EnvAgentToken = "SCION_AGENT_TOKEN"
	EnvAgentID    = "SCION_AGENT_ID"
	EnvProject    = "SCION_PROJECT"
	// EnvHandoff holds a reincarnated agent's preamble and handoff (also
	// in HandoffFile where its runtime mounts the broker's home): it
	// reaches the agent on every runtime, a Kubernetes pod's own home
	// included.
	EnvHandoff = "SCION_HANDOFF"
	// EnvSharedDir is where the agent finds its project's shared
	// directory (on Docker /scion/shared; on the process runtime its host
	// path).
	EnvSharedDir = "SCION_SHARED_DIR"
)

// HandoffFile is where, in its home, a reincarnated agent's new
// generation finds the Hub's preamble and the handoff it was given.
const HandoffFile = ".scion/handoff.md"

// MaxRequestBody bounds every JSON request body (a create may carry a
// large payload; anything bigger is refused with 413 request_too_large).
const MaxRequestBody = 8 << 20
