#!/usr/bin/env bash
# staticcheck.sh - make sure the pinned staticcheck is installed and print
# its path (make lint runs it over ./...):
#
#   "$(.ci/staticcheck.sh)" ./...
#
# Idempotent. The version is pinned here and the binary is cached by
# version under ${XDG_CACHE_HOME:-$HOME/.cache}/scion/staticcheck-<version>/
# (go install from the module proxy, about two minutes on two cores the
# first time; later runs reuse it). Everything but the path goes to stderr.
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION=v0.8.2 # honnef.co/go/tools
DIR=${XDG_CACHE_HOME:-$HOME/.cache}/scion/staticcheck-$VERSION
BIN=$DIR/staticcheck
if [[ ! -x $BIN ]]; then
	echo "staticcheck.sh: installing honnef.co/go/tools/cmd/staticcheck@$VERSION into $DIR" >&2
	mkdir -p "$DIR"
	# Outside the module, so that its go.mod and GOFLAGS do not apply.
	(cd / && GOFLAGS= GOBIN=$DIR go install "honnef.co/go/tools/cmd/staticcheck@$VERSION") >&2
fi
echo "$BIN"
