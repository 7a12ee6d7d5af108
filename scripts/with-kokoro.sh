#!/usr/bin/env bash
# Runs a command beside one Kokoro container (onnx engine, CPU) started for it, and always stops the
# container: `scripts/with-kokoro.sh cargo test -p earshot-e2e`. The command finds the container in
# EARSHOT_E2E_KOKORO_URL. `make test-e2e` runs the end-to-end binaries so: each would otherwise load the
# model into a container of its own (about six seconds each on a 2-core machine).
#
#   EARSHOT_LOG_DIR  where the container's log goes (default .run/e2e)
set -euo pipefail

cd "$(dirname "$0")/.."
logs=${EARSHOT_LOG_DIR:-.run/e2e}
mkdir -p "$logs"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

echo "with-kokoro: starting the Kokoro container on port $port (log: $logs/kokoro.log)"
(cd infra/kokoro && KOKORO_ENGINE=onnx KOKORO_PORT=$port KOKORO_LOG_LEVEL=warning exec setsid .venv/bin/python -m kokoro_server) >"$logs/kokoro.log" 2>&1 &
group=$!
stop() {
  kill -TERM -- "-$group" 2>/dev/null || true
  for _ in $(seq 1 50); do kill -0 -- "-$group" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL -- "-$group" 2>/dev/null || true
}
trap stop EXIT
trap 'exit 130' INT TERM  # until the command starts

for _ in $(seq 1 900); do
  if curl -fsS -o /dev/null "http://127.0.0.1:$port/ping" 2>/dev/null; then break; fi
  if ! kill -0 "$group" 2>/dev/null; then echo "with-kokoro: the container stopped before it was ready:"; tail -n 20 "$logs/kokoro.log"; exit 1; fi
  sleep 0.2
done
curl -fsS -o /dev/null "http://127.0.0.1:$port/ping" || { echo "with-kokoro: the container did not answer within 180 s"; exit 1; }
echo "with-kokoro: the container is ready"

# The command runs in the background so that a signal to this script reaches it at once (bash runs a trap
# only after a foreground command ends). A background command ignores SIGINT, so both are sent on as TERM.
EARSHOT_E2E_KOKORO_URL="http://127.0.0.1:$port" "$@" &
child=$!
trap 'kill -TERM "$child" 2>/dev/null || true' INT TERM
status=0
while :; do
  if wait "$child"; then status=0; else status=$?; fi
  kill -0 "$child" 2>/dev/null || break  # a trapped signal ends `wait` early: wait again for the command
done
exit "$status"
