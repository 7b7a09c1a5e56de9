// Command kube-apiserver is the upstream API server, built from
// k8s.io/kubernetes at the version this module requires, for the
// Kubernetes runtime's tests (see .ci/kube-apiserver.sh). It adds nothing:
// flags and behaviour are upstream's.
package main

import (
	"os"
	_ "time/tzdata"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}
