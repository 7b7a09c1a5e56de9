#!/usr/bin/env bash
# kube-apiserver.sh - make sure the Kubernetes runtime's test fixture is
# available and print the lines that point the tests at it:
#
#   eval "$(bash .ci/kube-apiserver.sh)"  # sets SCION_KUBE_APISERVER, SCION_ETCD
#
# Idempotent. etcd comes from Debian's etcd-server package (installed when
# no etcd is found). kube-apiserver is built from k8s.io/kubernetes by the
# separate module internal/testenv/kubeapiserver (so that k8s.io/kubernetes
# never enters the main module) and cached by version under
# ${XDG_CACHE_HOME:-$HOME/.cache}/scion/kube-apiserver-<version>/: the
# first build takes about 8 minutes on two cores (476 s measured), later runs reuse it.
# Nothing is started here: the tests start etcd and the API server
# themselves, once per test package (internal/testenv/kube).
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

if [[ ! -x $BIN ]]; then
	log "building kube-apiserver $VERSION into $BIN (about 8 minutes on two cores)"
	mkdir -p "$CACHE"
	start=$(date +%s)
	major=${VERSION#v}
	minor=${major#*.}
	(cd "$MOD" && CGO_ENABLED=0 GOFLAGS="-mod=readonly -buildvcs=false" go build -trimpath \
		-ldflags "-s -w -X k8s.io/component-base/version.gitVersion=$VERSION -X k8s.io/component-base/version.gitMajor=${major%%.*} -X k8s.io/component-base/version.gitMinor=${minor%%.*}" \
		-o "$BIN.tmp" .) >&2
	mv "$BIN.tmp" "$BIN"
	log "built in $(($(date +%s) - start))s"
fi

echo "export SCION_KUBE_APISERVER='$BIN'"
echo "export SCION_ETCD='$ETCD'"
