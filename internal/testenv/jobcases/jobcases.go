// Package jobcases is the one table of good and bad Job run values that
// every layer's test feeds to its own check (the CLI's `scion job run`,
// the Hub's validateJobRun, the broker's job.run, the spoke runner's
// Validate, the api rules themselves): the layers must agree on each, so
// that a value any of them refuses is refused by the first, before a run
// is accepted.
package jobcases

import (
	"strings"
	"time"
)

// Case changes one field of a valid run. Nil fields keep Base's value.
type Case struct {
	Name     string
	Cluster  *string
	Image    *string
	Command  []string
	GPUs     *int
	Queue    *string
	Deadline *time.Duration
	Env      map[string]string
	OK       bool
}

// Base is a run every layer accepts.
var Base = struct {
	Cluster, Image, Queue string
	Command               []string
	GPUs                  int
	Deadline              time.Duration
}{Cluster: "b200", Image: "registry.example/team/train:v1", Queue: "team-a", Command: []string{"python", "train.py"},
	GPUs: 1, Deadline: time.Hour}

func s(v string) *string               { return &v }
func n(v int) *int                     { return &v }
func d(v time.Duration) *time.Duration { return &v }

// Cases are the values of the rules: queue (Kueue's LocalQueue name that
// is also its queue-name label value), image, command, GPUs, deadline,
// env and cluster.
var Cases = []Case{
	{Name: "base", OK: true},
	{Name: "queue with a dot", Queue: s("team-a.h200"), OK: true},
	{Name: "queue of 63", Queue: s(strings.Repeat("q", 63)), OK: true},
	{Name: "queue of 64", Queue: s(strings.Repeat("q", 64))},
	{Name: "queue upper case", Queue: s("Team")},
	{Name: "queue underscore", Queue: s("team_a")},
	{Name: "queue ends with a dash", Queue: s("team-")},
	{Name: "queue starts with a dot", Queue: s(".team")},
	{Name: "queue with a slash", Queue: s("a/b")},
	{Name: "no queue", Queue: s(""), OK: true},
	{Name: "image of 512", Image: s("r/" + strings.Repeat("i", 510)), OK: true},
	{Name: "image of 513", Image: s("r/" + strings.Repeat("i", 511))},
	{Name: "image with a space", Image: s("busybox latest")},
	{Name: "image with a newline", Image: s("busybox\nx")},
	{Name: "no image", Image: s("")},
	{Name: "empty program", Command: []string{"", "x"}},
	{Name: "command arg with a newline", Command: []string{"sh", "-c", "a\nb"}},
	{Name: "257 arguments", Command: make257()},
	{Name: "gpus 64", GPUs: n(64), OK: true},
	{Name: "gpus 65", GPUs: n(65)},
	{Name: "gpus -1", GPUs: n(-1)},
	{Name: "deadline a week", Deadline: d(7 * 24 * time.Hour), OK: true},
	{Name: "deadline over a week", Deadline: d(7*24*time.Hour + time.Second)},
	{Name: "env ok", Env: map[string]string{"LR": "0.1", "_X": ""}, OK: true},
	{Name: "env name of 128", Env: map[string]string{strings.Repeat("E", 128): "v"}, OK: true},
	{Name: "env name of 129", Env: map[string]string{strings.Repeat("E", 129): "v"}},
	{Name: "env name with a dash", Env: map[string]string{"A-B": "v"}},
	{Name: "env name with a dot", Env: map[string]string{"a.b": "v"}},
	{Name: "env name starting with a digit", Env: map[string]string{"1A": "v"}},
	{Name: "env value over 8 KiB", Env: map[string]string{"A": strings.Repeat("v", 8<<10+1)}},
	{Name: "cluster upper case", Cluster: s("B200")},
	{Name: "cluster with a dot", Cluster: s("b.200")},
	{Name: "no cluster", Cluster: s(""), OK: true},
}

func make257() []string {
	c := make([]string, 257)
	for i := range c {
		c[i] = "a"
	}
	return c
}

// Run is a Case applied to Base.
type Run struct {
	Cluster, Image, Queue string
	Command               []string
	GPUs                  int
	Deadline              time.Duration
	Env                   map[string]string
}

// Apply returns Base with the case's changes.
func (c Case) Apply() Run {
	r := Run{Cluster: Base.Cluster, Image: Base.Image, Queue: Base.Queue, Command: Base.Command, GPUs: Base.GPUs,
		Deadline: Base.Deadline, Env: c.Env}
	if c.Cluster != nil {
		r.Cluster = *c.Cluster
	}
	if c.Image != nil {
		r.Image = *c.Image
	}
	if c.Command != nil {
		r.Command = c.Command
	}
	if c.GPUs != nil {
		r.GPUs = *c.GPUs
	}
	if c.Queue != nil {
		r.Queue = *c.Queue
	}
	if c.Deadline != nil {
		r.Deadline = *c.Deadline
	}
	return r
}
