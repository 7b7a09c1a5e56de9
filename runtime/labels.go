package runtime

// SpecLabels returns the labels a runtime attaches for spec: spec.Labels
// plus the scion.* identity labels taken from the spec's own fields. The
// fields win over same-named entries in spec.Labels so that inventory can
// trust them; empty fields are left out rather than recorded as "".
func SpecLabels(spec Spec) map[string]string {
	labels := make(map[string]string, len(spec.Labels)+5)
	for k, v := range spec.Labels {
		labels[k] = v
	}
	set := func(k, v string) {
		if v != "" {
			labels[k] = v
		}
	}
	set(LabelAgentID, spec.AgentID)
	set(LabelRunID, spec.RunID)
	set(LabelBrokerID, spec.BrokerID)
	set(LabelProjectID, spec.ProjectID)
	set(LabelSlug, spec.Slug)
	return labels
}
