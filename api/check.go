package api

// `scion check` (ADR-0046's per-cluster probes): what a broker host's
// check of its spokes and of its agents' sandbox identity found. It is the
// CLI's -o json shape, {"checks":[...]}, not a Hub route.

// Check statuses.
const (
	CheckPassed = "passed"
	CheckFailed = "failed"
)

// CheckResult is one probe's outcome. Fix says what to change when it
// failed (empty when it passed).
type CheckResult struct {
	// Cluster is the spoke's name in the fleet, or, for the sandbox
	// probes, the broker's own kubeconfig context.
	Cluster string `json:"cluster"`
	// Tier is the spoke's reachability tier; "broker" for the sandbox
	// probes on the broker's own cluster.
	Tier string `json:"tier"`
	// Profile is the broker profile whose block or namespace was
	// checked, when one was ("" for the fleet file's own blocks).
	Profile string `json:"profile,omitempty"`
	Probe   string `json:"probe"`
	Status  string `json:"status"`
	Message string `json:"message"`
	Fix     string `json:"fix,omitempty"`
}

// CheckReport is every probe of one `scion check`.
type CheckReport struct {
	Checks []CheckResult `json:"checks"`
}

// Failed is how many probes failed.
func (r CheckReport) Failed() int {
	n := 0
	for _, c := range r.Checks {
		if c.Status != CheckPassed {
			n++
		}
	}
	return n
}
