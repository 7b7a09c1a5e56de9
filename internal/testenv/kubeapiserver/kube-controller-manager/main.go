// Command kube-controller-manager is the upstream controller manager, built
// from k8s.io/kubernetes at the version this module requires, for the spoke
// fixture (internal/testenv/kube's StartSpoke runs its job,
// ttl-after-finished, garbage-collector and service-account controllers).
// It adds nothing: flags and behaviour are upstream's. See
// .ci/kube-apiserver.sh, which builds and caches it.
package main

import (
	"os"
	_ "time/tzdata"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app"
)

func main() {
	os.Exit(cli.Run(app.NewControllerManagerCommand()))
}
