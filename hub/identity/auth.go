package identity

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/hub/authstore"
	"github.com/scion-go/scion/hub/authz"
	"github.com/scion-go/scion/hub/httpapi"
	"github.com/scion-go/scion/hub/transport"
	"github.com/scion-go/scion/store"
)

const (
	userTokenPrefix  = "scu_"
	agentTokenPrefix = "sca_"
)

// NewSecret returns n random bytes: the secret of a token or a broker.
func NewSecret(n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on Linux
	}
	return b
}

// HashToken is what the store keeps of a bearer token (a user's, an
// access, scrape or join token): its SHA-256, never the token.
func HashToken(tok string) []byte {
	h := sha256.Sum256([]byte(tok))
	return h[:]
}

// newUserToken creates a bearer token for a user; only its hash is kept.
// ttl 0 means it does not expire (the workstation's bootstrap admin).
func (s *Service) newUserToken(ctx context.Context, userID, name string, ttl time.Duration) (string, error) {
	tok := userTokenPrefix + base64.RawURLEncoding.EncodeToString(NewSecret(32))
	now := s.opts.Now().UTC()
	t := &store.Token{ID: httpapi.NewID(), Hash: HashToken(tok), Kind: store.TokenUser, UserID: userID, Name: name, CreatedAt: now}
	if ttl > 0 {
		exp := now.Add(ttl)
		t.ExpiresAt = &exp
	}
	return tok, s.store.CreateToken(ctx, t)
}

// signInTTL is how long a token from an OIDC sign-in works; then the
// user signs in again, so someone removed at the provider loses access.
const signInTTL = 7 * 24 * time.Hour

// Agent tokens are signed with the Hub's persistent key (never rotated on
// restart, sealed at rest: signing_keys.go) rather than stored, so minting
// one costs no write on the create path.
//
// The claims (api.AgentTokenClaims) name the agent, its project, its role
// and its delegation chain (so a token read on its own tells whom it
// speaks for) and its expiry, but the Hub decides with the agent's stored
// record: a role change or a deleted agent takes effect at once, whatever
// the token says. A token expires after Options.AgentTokenTTL; the agent
// renews it before then (agent_token_refresh.go).

// MintAgentToken mints a token for agent a, now, in a's current token
// generation: the token of a create, start, restart or resume.
func (s *Service) MintAgentToken(a *store.Agent) string {
	tok, _ := s.mintAgentTokenAt(a, s.opts.Now())
	return tok
}

// mintAgentTokenAt mints a token for a issued at now, in a's current
// token generation, and returns its expiry. The token is a function of
// its arguments: minted again at the same second it is the same token
// (a renewal's repeat within the grace answers it so).
func (s *Service) mintAgentTokenAt(a *store.Agent, now time.Time) (string, time.Time) {
	exp := now.Add(s.opts.AgentTokenTTL).Truncate(time.Second)
	payload, _ := json.Marshal(api.AgentTokenClaims{AgentID: a.ID, ProjectID: a.ProjectID, Role: a.Role, Chain: a.DelegationChain,
		IssuedAt: now.Unix(), ExpiresAt: exp.Unix(), Generation: a.TokenGeneration})
	p := base64.RawURLEncoding.EncodeToString(payload)
	m := hmac.New(sha256.New, s.tokenKey)
	m.Write([]byte(p))
	return agentTokenPrefix + p + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil)), exp
}

// agentTokenExpiry is when a token with claims c stops working. Tokens of
// older versions carry no expiry: they last one lifetime from their issue.
func (s *Service) agentTokenExpiry(c api.AgentTokenClaims) time.Time {
	if c.ExpiresAt != 0 {
		return time.Unix(c.ExpiresAt, 0)
	}
	return time.Unix(c.IssuedAt, 0).Add(s.opts.AgentTokenTTL)
}

func (s *Service) verifyAgentToken(ctx context.Context, tok string) (*authz.Caller, error) {
	_, a, _, err := s.checkAgentToken(ctx, tok)
	if err != nil {
		return nil, err
	}
	return &authz.Caller{Kind: authz.Agent, ID: a.ID, Name: a.Slug, Role: a.Role, ProjectID: a.ProjectID,
		Scopes: a.Scopes, Passthrough: a.Passthrough}, nil
}

// checkAgentToken checks tok's signature, expiry, agent and generation,
// and returns its claims, its agent and its standing.
func (s *Service) checkAgentToken(ctx context.Context, tok string) (api.AgentTokenClaims, *store.Agent, tokenStanding, error) {
	var c api.AgentTokenClaims
	body := strings.TrimPrefix(tok, agentTokenPrefix)
	p, sig, ok := strings.Cut(body, ".")
	if !ok {
		return c, nil, tokenRetired, errBadToken
	}
	want := hmac.New(sha256.New, s.tokenKey)
	want.Write([]byte(p))
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, want.Sum(nil)) {
		return c, nil, tokenRetired, errBadToken
	}
	raw, err := base64.RawURLEncoding.DecodeString(p)
	if err != nil {
		return c, nil, tokenRetired, errBadToken
	}
	if json.Unmarshal(raw, &c) != nil || c.AgentID == "" {
		return c, nil, tokenRetired, errBadToken
	}
	now := s.opts.Now()
	if !now.Before(s.agentTokenExpiry(c)) {
		return c, nil, tokenRetired, errBadToken
	}
	// A deleted agent's token dies with it.
	a, err := s.store.GetAgent(ctx, c.AgentID)
	if err != nil || a.ProjectID != c.ProjectID {
		return c, nil, tokenRetired, errBadToken
	}
	st := judgeTokenGeneration(c.Generation, a, now)
	if st == tokenRetired {
		// Signed by this Hub and unexpired, but renewed away: the agent
		// holds a newer one, so this is a stale copy (a leak, or an agent
		// that lost its renewed token). Logged by ID, never the token.
		s.log.Warn("agent token of a retired generation refused", "agent", a.ID,
			"token_generation", c.Generation, "agent_token_generation", a.TokenGeneration)
		return c, nil, tokenRetired, errBadToken
	}
	return c, a, st, nil
}

var errBadToken = errors.New("invalid or expired token")

// authenticate identifies the caller of r: a bearer token (user or agent)
// or a broker's signed headers. It never logs the credential. Its reads
// are the system's: until it answers there is no caller to decide them
// for. The context it reads with stays its own; the request's gets the
// caller it returns (RequireAuth).
func (s *Service) authenticate(r *http.Request) (*authz.Caller, error) {
	ctx := authstore.AsSystem(r.Context())
	if id := r.Header.Get(api.HeaderBrokerID); id != "" {
		b, err := s.store.GetBroker(ctx, id)
		if err != nil || b.ID != id {
			s.log.Warn("broker authentication failed", "broker", id, "reason", "unknown broker")
			return nil, api.Unauthorized("invalid broker credentials")
		}
		secret, err := s.brokerSecret(b)
		if err != nil {
			s.log.Error("broker authentication failed", "broker", id, "reason", "broker secret: "+err.Error())
			return nil, api.Unauthorized("invalid broker credentials")
		}
		if err := s.verifyBroker(ctx, r, b.ID, secret); err != nil {
			return nil, err
		}
		return &authz.Caller{Kind: authz.Broker, ID: b.ID, Name: b.Name}, nil
	}
	h := r.Header.Get("Authorization")
	tok, ok := strings.CutPrefix(h, "Bearer ")
	if !ok || tok == "" {
		return nil, api.Unauthorized("authentication required: send Authorization: Bearer <token>")
	}
	if strings.HasPrefix(tok, agentTokenPrefix) {
		c, err := s.verifyAgentToken(ctx, tok)
		if err != nil {
			s.log.Warn("agent token rejected")
			return nil, api.Unauthorized("invalid or expired token")
		}
		return c, nil
	}
	// The token and its user in one read: this runs for every request.
	t, u, err := s.store.GetTokenAndUser(ctx, HashToken(tok))
	now := s.opts.Now()
	if err != nil || t.RevokedAt != nil || (t.ExpiresAt != nil && now.After(*t.ExpiresAt)) || t.Kind != store.TokenUser {
		s.log.Warn("user token rejected")
		return nil, api.Unauthorized("invalid or expired token")
	}
	if t.ProjectID != "" { // a user access token: one project, its scopes
		return &authz.Caller{Kind: authz.Token, ID: t.ID, UserID: u.ID, Name: t.Name, Role: u.Role, ProjectID: t.ProjectID, Scopes: t.Scopes}, nil
	}
	return &authz.Caller{Kind: authz.User, ID: u.ID, UserID: u.ID, Name: u.Name, Role: u.Role}, nil
}

// AuthenticateLimited is authenticate under the limit of failed
// authentications per client address: an address over it is answered 429
// before its credential is even looked at (so guessing tokens costs the
// guesser time, not the Hub database reads), and every failed credential
// takes one token of its bucket. On false the answer is written.
func (s *Service) AuthenticateLimited(w http.ResponseWriter, r *http.Request) (*authz.Caller, bool) {
	ip := transport.ClientIP(r)
	if blocked, wait := s.rl.authFail.Blocked(ip, s.opts.Now()); blocked {
		s.refuseRateLimited(w, r, wait, "failed authentications")
		return nil, false
	}
	c, err := s.authenticate(r)
	if err != nil {
		// Only a credential that was tried counts: a request with none
		// costs the Hub no lookup and guesses nothing.
		if r.Header.Get("Authorization") != "" || r.Header.Get(api.HeaderBrokerID) != "" {
			s.rl.authFail.Fail(ip, s.opts.Now())
		}
		httpapi.WriteError(s.log, w, r, err)
		return nil, false
	}
	return c, true
}

// RequireAuth wraps h so it runs only for an authenticated caller, with
// the caller in the request's context: every store call the handler
// makes is decided for it (hub/authstore), whether the handler asked
// hub/authz or not. The caller holds one of its busy slots meanwhile,
// and h's answer goes through httpapi.Guard.
func (s *Service) RequireAuth(h httpapi.StreamHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c, ok := s.AuthenticateLimited(w, r)
		if !ok {
			return
		}
		httpapi.NoteCaller(r.Context(), c.Principal())
		release, ok := s.holdCallerSlot(w, r, c)
		if !ok {
			return
		}
		defer release()
		w, r = httpapi.Guard(s.log, w, r.WithContext(authstore.WithCaller(r.Context(), *c)))
		h(w, r, c)
	}
}

// holdCallerSlot takes a busy slot of c for r (none is needed for a
// request that did not come through a ConnLimiter). False: the 429 is
// written, with its body unread.
func (s *Service) holdCallerSlot(w http.ResponseWriter, r *http.Request, c *authz.Caller) (release func(), ok bool) {
	release, limit, ok := transport.HoldCaller(r.Context(), c.Principal())
	if !ok {
		s.refuse429(w, r, time.Second, api.Errorf(api.CodeRateLimited,
			"too many requests in progress for this caller (at most %d at once); retry in 1 s", limit).WithDetail("retryAfter", 1))
	}
	return release, ok
}

// Predicates for the store errors this package decides on rather than
// answers.
func isNotFound(err error) bool { return errors.Is(err, store.ErrNotFound) }
func isExists(err error) bool   { return errors.Is(err, store.ErrAlreadyExists) }
