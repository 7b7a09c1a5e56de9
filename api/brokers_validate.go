package api

// The one check of a broker registration or join (RegisterBrokerRequest)
// and of a flat instance's runtime target, the CLI's and the Hub's.

// Bounds of a runtime target's names: a Kubernetes namespace is a DNS
// label; a kubeconfig context names a cluster, as long as a DNS name at
// most.
const (
	MaxTargetContextLen   = 253
	MaxTargetNamespaceLen = 63
	// MaxJoinTokenLen bounds a join token as sent (the Hub's are 52 bytes).
	MaxJoinTokenLen = 256
)

// Check refuses an incomplete runtime target, or one whose names are too
// long or hold control characters (400): a flat broker's target is its
// identity, so it must name one fully, and it is shown in tables and
// logs. field names it in the answer.
func (t RuntimeTarget) Check(field string) error {
	if err := CheckText(field+".context", t.Context, MaxTargetContextLen); err != nil {
		return err
	}
	if err := CheckText(field+".namespace", t.Namespace, MaxTargetNamespaceLen); err != nil {
		return err
	}
	if t.Complete() {
		return nil
	}
	switch t.Type {
	case RuntimeTargetDocker:
		return BadRequest("invalid %s: a docker target names no context or namespace", field)
	case RuntimeTargetKubernetes:
		return BadRequest("invalid %s: a kubernetes target needs both its context and its namespace (got context %s, namespace %s)",
			field, Quote(t.Context), Quote(t.Namespace))
	}
	return BadRequest("invalid %s: unknown type %s (use %s or %s)", field, Quote(t.Type), RuntimeTargetDocker, RuntimeTargetKubernetes)
}

// Validate is the one check of a RegisterBrokerRequest on its face: the
// name when given (a join whose token names the broker may give none; a
// registration must, which the Hub says), the token's bound, the flat
// instance's target.
func (r *RegisterBrokerRequest) Validate() error {
	if r.Name != "" {
		if err := CheckName("runtime broker", r.Name); err != nil {
			return err
		}
	}
	if len(r.JoinToken) > MaxJoinTokenLen {
		return BadRequest("joinToken is longer than %d bytes", MaxJoinTokenLen)
	}
	if r.RuntimeTarget != nil {
		return r.RuntimeTarget.Check("runtimeTarget")
	}
	return nil
}
