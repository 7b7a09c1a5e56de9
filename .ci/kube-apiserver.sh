#!/usr/bin/env bash
# kube-apiserver.sh - make sure the Kubernetes test fixtures are available
# and print the lines that point the tests at them:
#
#   eval "$(bash .ci/kube-apiserver.sh)"
#
# sets SCION_KUBE_APISERVER, SCION_ETCD (the plain API-server fixture) and
# SCION_KUBE_CONTROLLER_MANAGER, SCION_KWOK, SCION_KWOK_CRDS,
# SCION_KUEUE_CRDS (the spoke fixture: internal/testenv/kube.StartSpoke).
#
# Idempotent. etcd comes from Debian's etcd-server package (installed when
# no etcd is found). kube-apiserver and kube-controller-manager are built
# from k8s.io/kubernetes by the separate module internal/testenv/kubeapiserver
# (so that k8s.io/kubernetes never enters the main module) and cached by
# version under ${XDG_CACHE_HOME:-$HOME/.cache}/scion/kube-apiserver-<version>/.
# kwok (the fake kubelet: node, pod phases, pod logs) is built from its own
# module with `go install sigs.k8s.io/kwok/cmd/kwok@<version>` into
# .../scion/kwok-<version>/, with its Logs CRD beside it; Kueue's CRDs are
# copied out of the sigs.k8s.io/kueue module (fetched by `go mod download`,
# no Kueue code is built) into .../scion/kueue-<version>/crds/.
#
# Build times, first build on a fresh, quiet two-core machine (9 minutes in
# all; later runs reuse the cache):
#   kube-apiserver           344 s
#   kube-controller-manager   89 s (after kube-apiserver, whose packages it reuses)
#   kwok                      73 s (its own k8s.io module versions)
#   Kueue CRDs               a few seconds (download only)
# On a machine shared with other builds they take several times as long.
# The builds run one after the other, never concurrently.
# Nothing is started here: the tests start the processes themselves, once
# per test package (internal/testenv/kube).
# Everything but the export lines goes to stderr.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { echo "kube-apiserver.sh: $*" >&2; }

MOD=internal/testenv/kubeapiserver
VERSION=$(awk '$1 == "k8s.io/kubernetes" && $2 ~ /^v/ { print $2; exit } $1 == "require" && $2 == "k8s.io/kubernetes" { print $3; exit }' "$MOD/go.mod")
if [[ -z $VERSION ]]; then
	log "cannot read the k8s.io/kubernetes version from $MOD/go.mod"
	exit 1
fi
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/scion/kube-apiserver-$VERSION
BIN=$CACHE/kube-apiserver

ETCD=$(command -v etcd 2>/dev/null || true)
if [[ -z $ETCD && -x /usr/bin/etcd ]]; then
	ETCD=/usr/bin/etcd
fi
if [[ -z $ETCD ]]; then
	log "no etcd found; installing Debian's etcd-server"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update >&2
	apt-get install -y etcd-server >&2
	ETCD=/usr/bin/etcd
fi

KWOK_VERSION=v0.8.0
KUEUE_VERSION=v0.17.0
BASE=${XDG_CACHE_HOME:-$HOME/.cache}/scion
KCM=$CACHE/kube-controller-manager
KWOK_DIR=$BASE/kwok-$KWOK_VERSION
KWOK=$KWOK_DIR/kwok
KUEUE_CRDS=$BASE/kueue-$KUEUE_VERSION/crds

major=${VERSION#v}
minor=${major#*.}
# build PKG OUT: one k8s.io/kubernetes command of the fixture module.
build() {
	local pkg=$1 out=$2 start
	log "building $(basename "$out") $VERSION into $out"
	mkdir -p "$(dirname "$out")"
	start=$(date +%s)
	(cd "$MOD" && CGO_ENABLED=0 GOFLAGS="-mod=readonly -buildvcs=false" go build -trimpath \
		-ldflags "-s -w -X k8s.io/component-base/version.gitVersion=$VERSION -X k8s.io/component-base/version.gitMajor=${major%%.*} -X k8s.io/component-base/version.gitMinor=${minor%%.*}" \
		-o "$out.tmp" "$pkg") >&2
	mv "$out.tmp" "$out"
	log "built $(basename "$out") in $(($(date +%s) - start))s"
}

# moddir MODULE@VERSION: the module's directory in the module cache,
# downloaded through the module proxy when missing. Run outside any module
# so that no go.mod is consulted or edited.
moddir() {
	(cd / && GOFLAGS= go mod download -json "$1" | awk -F'"' '$2 == "Dir" { print $4 }')
}

# One build at a time, machine-wide: a second caller waits here, then
# finds the binaries built.
mkdir -p "$BASE"
exec 9>"$BASE/.build.lock"
flock 9

if [[ ! -x $BIN ]]; then
	build . "$BIN"
fi
if [[ ! -x $KCM ]]; then
	build ./kube-controller-manager "$KCM"
fi
if [[ ! -x $KWOK || ! -f $KWOK_DIR/crds/kwok.x-k8s.io_logs.yaml ]]; then
	log "building kwok $KWOK_VERSION into $KWOK"
	mkdir -p "$KWOK_DIR/crds"
	start=$(date +%s)
	tmp=$(mktemp -d)
	(cd / && CGO_ENABLED=0 GOFLAGS="-buildvcs=false" GOBIN="$tmp" go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION") >&2
	src=$(moddir "sigs.k8s.io/kwok@$KWOK_VERSION")
	cp "$src/kustomize/crd/bases/kwok.x-k8s.io_logs.yaml" "$KWOK_DIR/crds/"
	chmod u+w "$KWOK_DIR/crds/"*.yaml
	mv "$tmp/kwok" "$KWOK"
	rmdir "$tmp"
	log "built kwok in $(($(date +%s) - start))s"
fi
if [[ ! -f $KUEUE_CRDS/kueue.x-k8s.io_workloads.yaml ]]; then
	log "copying Kueue $KUEUE_VERSION's CRDs into $KUEUE_CRDS"
	src=$(moddir "sigs.k8s.io/kueue@$KUEUE_VERSION")
	mkdir -p "$KUEUE_CRDS.tmp"
	cp "$src"/config/components/crd/bases/*.yaml "$KUEUE_CRDS.tmp/"
	chmod u+w "$KUEUE_CRDS.tmp/"*.yaml
	rm -rf "$KUEUE_CRDS"
	mv "$KUEUE_CRDS.tmp" "$KUEUE_CRDS"
fi

echo "export SCION_KUBE_APISERVER='$BIN'"
echo "export SCION_ETCD='$ETCD'"
echo "export SCION_KUBE_CONTROLLER_MANAGER='$KCM'"
echo "export SCION_KWOK='$KWOK'"
echo "export SCION_KWOK_CRDS='$KWOK_DIR/crds'"
echo "export SCION_KUEUE_CRDS='$KUEUE_CRDS'"
