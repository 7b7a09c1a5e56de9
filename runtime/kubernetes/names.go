package kubernetes

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/scion-go/scion/runtime"
)

// Labels and annotations of the runtime's own, besides runtime's scion.*
// identity labels.
const (
	// LabelSharingMode carries the project's sharing mode in Spec.Labels
	// (the broker sets it); empty means empty-per-agent.
	LabelSharingMode = runtime.LabelSharingMode
	// LabelProfile names the broker profile an agent runs under (the
	// broker sets it); empty means Options.DefaultProfile.
	LabelProfile = runtime.LabelProfile
	// LabelTTY "true" runs the agent with a terminal, as on Docker.
	LabelTTY = "scion.tty"
	// LabelMemory and LabelCPUs are resource limits, as on Docker
	// ("512m" is 512 MiB, as Docker reads it, not 0.512 bytes).
	LabelMemory = "scion.memory"
	LabelCPUs   = "scion.cpus"

	// labelKind tells a record from a claim on a label selector.
	labelKind = "scion.kind"
	// labelClaimScope says whose a claim is: "agent" claims go with the
	// agent, "project" and "share" claims are left for the next agent.
	labelClaimScope = "scion.claim_scope"

	// annoLabels keeps the spec's labels whole: not every label a spec
	// carries is a valid Kubernetes label value (scion.ports is not).
	annoLabels = "scion.dev/labels"
	// annoSafeToEvict is the cluster autoscaler's annotation.
	annoSafeToEvict = "cluster-autoscaler.kubernetes.io/safe-to-evict"
)

// objectName is the name of an agent's record and pod (and the prefix of
// its claims): readable from the slug, unique from a hash of the broker
// and agent IDs (two brokers sharing a namespace never collide, and a
// duplicate Create of one agent collides with itself on the API server),
// and short enough to be a DNS label even with a claim suffix.
func objectName(brokerID, agentID, slug string) string {
	sum := sha256.Sum256([]byte(brokerID + "\x00" + agentID))
	hash := hex.EncodeToString(sum[:])[:12]
	if s := dnsPart(slug, 24); s != "" {
		return "scion-" + s + "-" + hash
	}
	return "scion-" + hash
}

// projectClaimName names a claim of the project's (its shared checkout,
// base clone or shared directory) in a namespace.
func projectClaimName(projectID, what string) string {
	sum := sha256.Sum256([]byte(projectID))
	return "scion-project-" + hex.EncodeToString(sum[:])[:12] + "-" + what
}

// nfsClaimName names the claim bound to the NFS share's PersistentVolume.
func nfsClaimName(pvName string) string {
	sum := sha256.Sum256([]byte(pvName))
	if s := dnsPart(pvName, 30); s != "" {
		return "scion-nfs-" + s + "-" + hex.EncodeToString(sum[:])[:8]
	}
	return "scion-nfs-" + hex.EncodeToString(sum[:])[:8]
}

// dnsPart lowercases s, turns everything but [a-z0-9] into '-', squeezes
// and trims the dashes and cuts it to max characters.
func dnsPart(s string, max int) string {
	var b strings.Builder
	dash := false
	for _, c := range strings.ToLower(s) {
		ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if !ok {
			if !dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = true
			continue
		}
		dash = false
		b.WriteRune(c)
		if b.Len() >= max {
			break
		}
	}
	return strings.Trim(b.String(), "-")
}

// validID reports whether id can be an agent ID here: it must be usable
// as a label value, since agents are found by label selector. Other IDs
// are simply unknown (lookups answer ErrNotFound without a round trip).
func validID(id string) bool {
	return id != "" && len(validation.IsValidLabelValue(id)) == 0
}

// objectLabels picks the labels that can go on Kubernetes objects: the
// identity labels (which Create has checked) and every other spec label
// whose key and value Kubernetes accepts. The full set is kept in the
// annoLabels annotation.
func objectLabels(spec map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range spec {
		if strings.HasPrefix(k, AgentSettingPrefix) {
			continue // settings, not identity: kept in the annotation only
		}
		if len(validation.IsQualifiedName(k)) == 0 && len(validation.IsValidLabelValue(v)) == 0 {
			out[k] = v
		}
	}
	return out
}

// checkIdentity refuses a spec whose identity labels could not be
// selected on.
func checkIdentity(spec runtime.Spec) error {
	if spec.AgentID == "" {
		return fmt.Errorf("kubernetes runtime: Spec.AgentID is required")
	}
	for k, v := range map[string]string{runtime.LabelAgentID: spec.AgentID, runtime.LabelBrokerID: spec.BrokerID,
		runtime.LabelRunID: spec.RunID} {
		if v == "" && k == runtime.LabelRunID {
			continue
		}
		if errs := validation.IsValidLabelValue(v); v == "" || len(errs) > 0 {
			return fmt.Errorf("kubernetes runtime: %s %q is not a valid label value: %s", k, v, strings.Join(errs, "; "))
		}
	}
	return nil
}
