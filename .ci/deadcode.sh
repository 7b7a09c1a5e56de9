#!/usr/bin/env bash
# deadcode.sh - the pinned deadcode's path, installed once (.ci/gotool.sh);
# make lint runs it over the repo's programs:
#
#   "$(.ci/deadcode.sh)" ./cmd/scion ./bench/...
set -euo pipefail
exec "$(dirname "$0")/gotool.sh" deadcode golang.org/x/tools/cmd/deadcode v0.52.0
