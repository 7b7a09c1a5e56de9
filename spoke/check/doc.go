// Package check decides `scion check` (ADR-0046): from what the probes
// saw (a spoke's answer to /version, its access reviews, the agent
// sandbox identity's access reviews on the broker's own cluster, that
// identity's ServiceAccount object and the runtime's pod template), it
// says which probes passed and, for each that failed, the exact fix. It
// is pure: plain inputs in, results out, no client; the probes' I/O is in
// spoke/check/probe.
//
// A passed sandbox probe is necessary, not sufficient (the ADR's residual
// risk): an access review answers for the rules the authorizers know
// today, not for every path to a Secret (docs/spokes.md).
package check
