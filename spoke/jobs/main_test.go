package jobs

import (
	"os"
	"testing"
	"time"

	"github.com/scion-go/scion/internal/testenv/kube"
)

// One spoke for the package: its Cluster also serves the tests that need
// only an API server (kube.Need).
func TestMain(m *testing.M) {
	os.Exit(kube.SpokeMain(m, kube.SpokeOptions{StartAfter: 200 * time.Millisecond, RunFor: time.Second}))
}
