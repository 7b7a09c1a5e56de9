#!/usr/bin/env bash
# staticcheck.sh - the pinned staticcheck's path, installed once
# (.ci/gotool.sh); make lint runs it over ./...:
#
#   "$(.ci/staticcheck.sh)" ./...
set -euo pipefail
exec "$(dirname "$0")/gotool.sh" staticcheck honnef.co/go/tools/cmd/staticcheck v0.8.2
