#!/usr/bin/env bash
# gotool.sh - make sure a pinned Go tool is installed and print its path:
#
#   .ci/gotool.sh NAME PACKAGE VERSION
#
# (staticcheck.sh and deadcode.sh pin theirs through it). Idempotent: the
# binary is cached by version under
# ${XDG_CACHE_HOME:-$HOME/.cache}/scion/NAME-VERSION/ (go install from the
# module proxy, a minute or two on two cores the first time; later runs
# reuse it). Everything but the path goes to stderr.
set -euo pipefail
name=$1 pkg=$2 version=$3
DIR=${XDG_CACHE_HOME:-$HOME/.cache}/scion/$name-$version
BIN=$DIR/$name
if [[ ! -x $BIN ]]; then
	echo "$name: installing $pkg@$version into $DIR" >&2
	mkdir -p "$DIR"
	# Outside the module, so that its go.mod and GOFLAGS do not apply.
	(cd / && GOFLAGS= GOBIN=$DIR go install "$pkg@$version") >&2
fi
echo "$BIN"
