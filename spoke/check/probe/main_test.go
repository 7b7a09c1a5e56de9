package probe

import (
	"os"
	"testing"

	"github.com/scion-go/scion/internal/testenv/kube"
)

func TestMain(m *testing.M) { os.Exit(kube.Main(m)) }
