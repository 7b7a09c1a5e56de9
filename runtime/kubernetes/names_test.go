package kubernetes

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/scion-go/scion/runtime"
)

func TestObjectNames(t *testing.T) {
	a := objectName("broker-1", "0193f0d2-7b1c-7c3e-9f00-1234567890ab", "Fix the Login Bug!!")
	b := objectName("broker-2", "0193f0d2-7b1c-7c3e-9f00-1234567890ab", "Fix the Login Bug!!")
	if a == b {
		t.Fatal("two brokers' agents of one ID share a name")
	}
	if !strings.HasPrefix(a, "scion-fix-the-login-bug-") {
		t.Errorf("name %q does not show the slug", a)
	}
	for _, n := range []string{a, objectName("b", "x", ""), objectName("b", "x", strings.Repeat("Ü-", 100)),
		objectName("b", "x", "--") + "-abcdef-workspace", projectClaimName("p", "shared-dir"), nfsClaimName("PV_Name.with.dots")} {
		if errs := validation.IsDNS1123Label(n); len(errs) > 0 {
			t.Errorf("%q is not a DNS label: %v", n, errs)
		}
	}
}

func TestValidIDAndIdentity(t *testing.T) {
	for id, want := range map[string]bool{"rtt-life-1": true, "0193f0d2-7b1c": true, "": false, "..": false, "a/b": false,
		strings.Repeat("a", 64): false} {
		if validID(id) != want {
			t.Errorf("validID(%q) = %v, want %v", id, !want, want)
		}
	}
	if err := checkIdentity(runtime.Spec{AgentID: "a", BrokerID: "b"}); err != nil {
		t.Errorf("checkIdentity without run ID: %v", err)
	}
	if err := checkIdentity(runtime.Spec{AgentID: "a", BrokerID: "b", RunID: "has space"}); err == nil {
		t.Error("checkIdentity accepted a run ID that is no label value")
	}
}

func TestObjectLabelsKeepsOnlyValidOnes(t *testing.T) {
	got := objectLabels(map[string]string{runtime.LabelAgentID: "a1", "scion.ports": "8080:31000,9090/udp:0",
		"scion.k8s.namespace": "x", "test.name": "ok"})
	want := map[string]string{runtime.LabelAgentID: "a1", "test.name": "ok"}
	if len(got) != len(want) || got[runtime.LabelAgentID] != "a1" || got["test.name"] != "ok" {
		t.Fatalf("objectLabels = %v, want %v", got, want)
	}
}
