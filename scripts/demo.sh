#!/usr/bin/env bash
# The README's first command: start a workstation Hub (Hub + local broker,
# loopback, SQLite under ~/.scion), run a demo agent and show its logs.
# The Hub keeps running afterwards; the script says how to stop it.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${SCION_BIN:-$PWD/bin/scion}
HOME_DIR=${SCION_HOME:-$HOME/.scion}
mkdir -p "$HOME_DIR"
URL=http://127.0.0.1:8780

if ! curl -fsS "$URL/healthz" >/dev/null 2>&1; then
  echo "==> starting a workstation Hub (log: $HOME_DIR/hub.log)"
  nohup "$BIN" server start --workstation >"$HOME_DIR/hub.log" 2>&1 &
  echo $! >"$HOME_DIR/hub.pid"
  for _ in $(seq 1 100); do
    curl -fsS "$URL/readyz" >/dev/null 2>&1 && break
    sleep 0.1
  done
  curl -fsS "$URL/readyz" >/dev/null || { echo "hub did not start; see $HOME_DIR/hub.log"; exit 1; }
else
  echo "==> a workstation Hub is already running at $URL"
fi

# Wait for the local broker's control channel.
for _ in $(seq 1 100); do
  "$BIN" hub brokers -o json 2>/dev/null | grep -q '"status": *"online"' && break
  sleep 0.1
done
echo "==> runtime brokers"
"$BIN" hub brokers

RUNTIME=$("$BIN" hub brokers -o json | sed -n 's/.*"runtime": *"\([a-z]*\)".*/\1/p' | head -n1)
case "$RUNTIME" in
docker) echo "==> runtime: docker (agents run in containers of the local image scion-demo:latest, built FROM scratch)" ;;
process) echo "==> runtime: process (no Docker Engine answered: agents run as unsandboxed local processes)" ;;
*) echo "==> runtime: $RUNTIME" ;;
esac

"$BIN" delete demo >/dev/null 2>&1 || true
echo "==> starting the demo agent"
"$BIN" start demo -- scion agent-demo --steps 5 --interval 1s
"$BIN" list
echo "==> logs of the demo agent (following until it exits)"
"$BIN" logs demo -f
"$BIN" list
echo
echo "The Hub is still running at $URL (pid $(cat "$HOME_DIR/hub.pid" 2>/dev/null || echo '?'))."
echo "Try: bin/scion start my-agent -- scion agent-demo --echo --stay; bin/scion attach my-agent; bin/scion exec my-agent -- scion agent-demo --steps 0"
echo "Its web page: $URL/ui/ (sign in with the adminToken of $HOME_DIR/workstation.json)."
echo "Stop it with: kill \$(cat $HOME_DIR/hub.pid)"
