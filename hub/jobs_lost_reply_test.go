package hub_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/scion-go/scion/api"
	"github.com/scion-go/scion/internal/testenv"
	"github.com/scion-go/scion/internal/wait"
	"github.com/scion-go/scion/wire"
)

// TestJobRunLostReplyIsResent: the broker accepts a job.run and the
// answer is lost with its control channel (DropReply). The Hub sends the
// run again on the broker's next session under the same key
// ("job.run:<job ID>"), the broker answers it from its keyed-command
// record, and so the user's POST gets 201 with the Job where the broker
// put it, the spoke saw one submit, and the Job runs to its end once.
func TestJobRunLostReplyIsResent(t *testing.T) {
	var mu sync.Mutex
	var keys []string // of every job.run the broker answered
	e := testenv.New(t, testenv.Options{Brokers: 1, Jobs: true, MinBackoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond,
		DropReply: func(_, method, key string) bool {
			if method != wire.MethodJobRun {
				return false
			}
			mu.Lock()
			defer mu.Unlock()
			keys = append(keys, key)
			return len(keys) == 1 // the first answer is lost
		}})
	ctx := context.Background()
	b := e.Brokers()[0]
	a, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "worker", Project: "default", Start: true, Command: []string{"x"}})
	if err != nil {
		t.Fatal(err)
	}
	status, body := post(t, e, "/agents/"+a.ID+"/jobs", "", api.JobRunRequest{Cluster: "h200", Image: "busybox", Command: []string{"true"}})
	var j api.Job
	if status != http.StatusCreated || json.Unmarshal(body, &j) != nil {
		t.Fatalf("run with its answer lost: %d %s, want 201 and the Job", status, body)
	}
	if j.State != api.JobStatePending || j.Cluster != "h200" || j.Namespace != "scion-jobs" || j.Name != "scion-job-"+j.ID || j.Queue != "h200" {
		t.Fatalf("job %+v, want pending on h200 where the broker put it", j)
	}
	mu.Lock()
	got := slices.Clone(keys)
	mu.Unlock()
	if want := "job.run:" + j.ID; len(got) != 2 || got[0] != want || got[1] != want {
		t.Fatalf("job.run keys %q, want the run and its resend, both %q", got, want)
	}

	spoke := b.Spoke
	if s := spoke.WaitSubmits(t, 1); s[0].JobID != j.ID || s[0].Cluster != "h200" {
		t.Fatalf("submitted %+v, want job %s on h200", s[0], j.ID)
	}
	spoke.Succeed(j.ID, `{"ok":true}`, "done\n")
	wait.Eventually(t, 15*time.Second, wait.Interval, func() error {
		got, err := e.Admin.GetJob(ctx, j.ID)
		if err != nil || got.State != api.JobStateSucceeded || string(got.Result) != `{"ok":true}` {
			return fmt.Errorf("job %+v (%v), want it succeeded with its result", got, err)
		}
		return nil
	})
	if s := spoke.Submits(); len(s) != 1 {
		t.Fatalf("the spoke saw %d submits, want 1: %+v", len(s), s)
	}
	if c := spoke.Cancels(); len(c) != 0 {
		t.Fatalf("the spoke saw cancels %v of a Job the Hub accepted", c)
	}
}

// TestJobRunLostReplyBrokerGone: the broker accepts a job.run, its answer
// is lost and the broker stops before it reconnects. The Hub waits for
// its next session only as long as job.run's deadline: the POST is then
// 503 (the outcome unknown), and the ledger's row is an error, not a Job
// pending for ever.
func TestJobRunLostReplyBrokerGone(t *testing.T) {
	reached, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	e := testenv.New(t, testenv.Options{Brokers: 1, Jobs: true,
		DropReply: func(_, method, _ string) bool {
			first := false
			if method == wire.MethodJobRun {
				once.Do(func() { first = true })
			}
			if first {
				close(reached)
				<-release // until the broker is gone
			}
			return first
		}})
	ctx := context.Background()
	const deadline = 2 * time.Second
	e.Hub.SetJobRunTimeout(deadline)
	a, err := e.Admin.CreateAgent(ctx, api.CreateAgentRequest{Name: "worker", Project: "default", Start: true, Command: []string{"x"}})
	if err != nil {
		t.Fatal(err)
	}
	type answer struct {
		status int
		body   []byte
	}
	first := make(chan answer, 1)
	go func() {
		st, body := post(t, e, "/agents/"+a.ID+"/jobs", "", api.JobRunRequest{Cluster: "h200", Image: "busybox", Command: []string{"true"}})
		first <- answer{st, body}
	}()
	<-reached
	e.StopBroker(e.Brokers()[0])
	close(release)
	var ans answer
	select {
	case ans = <-first:
	case <-time.After(deadline + 10*time.Second):
		t.Fatalf("the run was not answered within job.run's deadline (%v) and a margin", deadline)
	}
	var eb api.ErrorBody
	if ans.status != http.StatusServiceUnavailable || json.Unmarshal(ans.body, &eb) != nil || eb.Error.Code != api.CodeBrokerOffline {
		t.Fatalf("run with its answer lost and the broker gone: %d %s, want 503 %s", ans.status, ans.body, api.CodeBrokerOffline)
	}
	l, err := e.Admin.ListAgentJobs(ctx, a.ID, "", "", 0)
	if err != nil || len(l.Items) != 1 || l.Items[0].State != api.JobStateError {
		t.Fatalf("jobs %+v (%v), want the one run, in error", l, err)
	}
}
