// Package storetest is the conformance suite for store.Store: every
// implementation's tests call Run, so the engines cannot drift apart. It
// also has the helpers other packages' tests use to get a PostgreSQL
// database (PostgresURL, NewPostgresDB) and the shared benchmarks.
//
// Beyond the interface's doc comments the suite pins down behaviour the
// Hub relies on, identically in every engine:
//   - Create* fill in an empty ID (UUIDv7) and zero times, normalise times
//     to UTC microseconds, and write the stored record back into the
//     argument only on success; Update* set UpdatedAt to now.
//   - Read records equal (==, reflect.DeepEqual) what was written,
//     nil-versus-empty slices and maps and the agent payload's bytes
//     included.
//   - List-like methods return empty, non-nil slices and maps.
//   - Release of a slot not held is not an error; UnlinkProvider of a link
//     that does not exist is ErrNotFound; Reserve never moves a slot held
//     on another broker (ErrReservationScope, nothing written).
//   - A foreign key to a missing record (CreateAgent's project, Reserve's
//     agent or broker, LinkProvider's ends) is ErrNotFound.
//   - DeleteAgent also deletes the agent's tokens.
//   - An agent's token generation is written only by RenewAgentToken
//     (never by UpdateAgent, never moving Version).
//   - DeleteProject also deletes the project's secrets, and a secret put
//     while its project is deleted never outlives it.
//   - A non-empty (Issuer, Subject) names at most one user; an empty
//     subject is never found by GetUserBySubject.
//   - The dispatch queue keeps one pending dispatch per agent and method,
//     delivers in enqueue order per broker, survives its agent (so that
//     delivery can mark it skipped) but not its broker.
//   - An idempotency record exists exactly when the agent it created
//     does, and an unexpired key is refused before any other constraint.
//   - A broker nonce is used once until it expires; it goes with its
//     broker.
//   - A Job's row goes with its project, not with its agent or broker;
//     its LogBytes and TraceBytes are always len(Logs) and len(Trace), an
//     empty Trace or Result reads back nil, and its bytes (NUL, invalid
//     UTF-8) survive. A broker secret goes with its broker.
package storetest

import (
	"errors"
	"reflect"
	"testing"

	"github.com/scion-go/scion/store"
)

// Run runs the conformance suite. open must return a new, empty store for
// each call and close it when the test ends (t.Cleanup); subtests run in
// parallel, each on its own store.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, store.Store)
	}{
		{"Projects", testProjects},
		{"DeleteProject", testDeleteProject},
		{"Providers", testProviders},
		{"Brokers", testBrokers},
		{"DeleteBroker", testDeleteBroker},
		{"BrokerWorkspaceStorage", testBrokerWorkspaceStorage},
		{"AgentPlacement", testAgentPlacement},
		{"MoveRecords", testMoveRecords},
		{"MoveReservation", testMoveReservation},
		{"DeleteBrokerRace", testDeleteBrokerRace},
		{"UpdateBrokerWith", testUpdateBrokerWith},
		{"CreateOnGoneBroker", testCreateOnGoneBroker},
		{"DeleteBrokerCreateWithoutSlotRace", testDeleteBrokerCreateWithoutSlotRace},
		{"Agents", testAgents},
		{"UpdateAgent", testUpdateAgent},
		{"AgentPorts", testAgentPorts},
		{"AgentIdentity", testAgentIdentity},
		{"DeleteAgent", testDeleteAgent},
		{"ListAgentsFilter", testListAgentsFilter},
		{"Reservations", testReservations},
		{"CreateAgentReserve", testCreateAgentReserve},
		{"UpdateAgentReserve", testUpdateAgentReserve},
		{"ReserveOnGoneBroker", testReserveOnGoneBroker},
		{"Users", testUsers},
		{"UserIdentity", testUserIdentity},
		{"Tokens", testTokens},
		{"ZeroTimes", testZeroTimes},
		{"TokenAndUser", testTokenAndUser},
		{"ListTokens", testListTokens},
		{"JoinTokens", testJoinTokens},
		{"JoinBroker", testJoinBroker},
		{"JoinBrokerRace", testJoinBrokerRace},
		{"Secrets", testSecrets},
		{"DeleteProjectSecrets", testDeleteProjectSecrets},
		{"PutSecretDeleteProjectRace", testPutSecretDeleteProjectRace},
		{"Settings", testSettings},
		{"SettingVersions", testSettingVersions},
		{"AgentTokenGeneration", testAgentTokenGeneration},
		{"Ping", testPing},
		{"Pagination", testPagination},
		{"PaginationAgents", testPaginationAgents},
		{"PaginationWhileWriting", testPaginationWhileWriting},
		{"PaginationLimits", testPaginationLimits},
		{"ReserveRace", testReserveRace},
		{"CreateAgentReserveRace", testCreateAgentReserveRace},
		{"UpdateAgentReserveRace", testUpdateAgentReserveRace},
		{"ConsumeJoinTokenRace", testConsumeJoinTokenRace},
		{"UpdateAgentRace", testUpdateAgentRace},
		{"DeleteProjectRace", testDeleteProjectRace},
		{"DispatchQueue", testDispatchQueue},
		{"EnqueueDispatchRace", testEnqueueDispatchRace},
		{"EnqueueWhileFinishing", testEnqueueWhileFinishing},
		{"IdempotencyKeys", testIdempotencyKeys},
		{"CreateAgentKeyedRace", testCreateAgentKeyedRace},
		{"CreateAgentWithLink", testCreateAgentWithLink},
		{"CreateAgentReplacing", testCreateAgentReplacing},
		{"BrokerNonces", testBrokerNonces},
		{"UseNonceRace", testUseNonceRace},
		{"BrokerRuntimeTarget", testBrokerRuntimeTarget},
		{"AgentPin", testAgentPin},
		{"PinReadOnly", testPinReadOnly},
		{"ReserveScope", testReserveScope},
		{"ReserveScopeRace", testReserveScopeRace},
		{"Jobs", testJobs},
		{"ListJobs", testListJobs},
		{"UpdateJobWith", testUpdateJobWith},
		{"UpdateJobWithRace", testUpdateJobWithRace},
		{"ExpirePendingJobs", testExpirePendingJobs},
		{"DeleteProjectJobs", testDeleteProjectJobs},
		{"CreateJobDeleteProjectRace", testCreateJobDeleteProjectRace},
		{"BrokerSecrets", testBrokerSecrets},
		{"DeleteBrokerSecrets", testDeleteBrokerSecrets},
		{"PutBrokerSecretDeleteBrokerRace", testPutBrokerSecretDeleteBrokerRace},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, open(t))
		})
	}
}

// must fails the test now if err is not nil.
func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// wantErr checks errors.Is(err, target).
func wantErr(t testing.TB, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error = %v, want %v", err, target)
	}
}

// equal checks got and want are deeply equal.
func equal(t testing.TB, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("mismatch\n got: %+v\nwant: %+v", deref(got), deref(want))
	}
}

func deref(v any) any {
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer && !rv.IsNil() {
		return rv.Elem().Interface()
	}
	return v
}
