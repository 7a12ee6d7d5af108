#!/usr/bin/env bash
# `make run` and `make run-aws` stop everything they start, however they are stopped, and the AWS path
# never trusts the previous run's certificate: the local run script itself under test.
#   1. run-aws with a stale certificate left in its log folder: it must speak through the stand-ins
#      (TLS with this run's certificate), then SIGTERM to its process group must leave nothing running;
#   2. run, then SIGKILL to the script alone (no trap can run): its children must still stop.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
: "${EARSHOT_BIN:?EARSHOT_BIN names the earshot binary}" "${STANDINS_BIN:?STANDINS_BIN names the stand-ins binary}"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

answers() { curl -fsS -o /dev/null --max-time 2 "$1" 2>/dev/null; }
wait_until() { # seconds, then a command that must succeed
  local seconds=$1; shift
  for _ in $(seq 1 $((seconds * 10))); do "$@" && return 0; sleep 0.1; done
  return 1
}
none_listening() { for p in "$@"; do answers "http://127.0.0.1:$p/" && return 1; (echo > "/dev/tcp/127.0.0.1/$p") 2>/dev/null && return 1; done; return 0; }

echo "test-run: 1. run-aws with the previous run's certificate left behind, stopped by SIGTERM to its group"
port=$(free_port) kport=$(free_port) sport=$(free_port)
echo "-----BEGIN CERTIFICATE-----
bm90IHRoaXMgcnVuJ3MgY2VydGlmaWNhdGU=
-----END CERTIFICATE-----" > "$logs/standins.pem"
setsid env PATH_MODE=aws EARSHOT_BIN="$EARSHOT_BIN" STANDINS_BIN="$STANDINS_BIN" EARSHOT_LOG_DIR="$logs" \
  PORT="$port" KOKORO_PORT="$kport" STANDINS_PORT="$sport" "$root/scripts/run-local.sh" > "$logs/run.out" 2>&1 &
script=$!
if ! wait_until 240 answers "http://127.0.0.1:$port/healthz"; then
  echo "test-run: run-aws did not become healthy"; cat "$logs/run.out" "$logs/earshot.log" 2>/dev/null | tail -30; kill -KILL -- "-$script"; exit 1
fi
for body in '{"text":"Hello there.","backend":"kokoro"}' '{"text":"Hello there.","backend":"polly"}'; do
  reply=$(curl -sS -N --max-time 60 "http://127.0.0.1:$port/v1/speak" -d "$body")
  grep -q '^event: done' <<<"$reply" || { echo "test-run: $body was not spoken through the stand-ins:"; head -c 600 <<<"$reply"; tail -5 "$logs/earshot.log"; kill -KILL -- "-$script"; exit 1; }
done
kill -TERM -- "-$script"
wait_until 20 bash -c "! kill -0 $script 2>/dev/null" || { echo "test-run: the run script did not end on SIGTERM"; exit 1; }
wait_until 20 none_listening "$port" "$kport" "$sport" || { echo "test-run: something still listens after SIGTERM (ports $port $kport $sport)"; exit 1; }
echo "test-run: spoken through the stand-ins with this run's certificate; nothing left running"

echo "test-run: 2. run, stopped by SIGKILL to the script alone"
port=$(free_port) kport=$(free_port)
env EARSHOT_BIN="$EARSHOT_BIN" EARSHOT_LOG_DIR="$logs" PORT="$port" KOKORO_PORT="$kport" "$root/scripts/run-local.sh" > "$logs/run2.out" 2>&1 &
script=$!
wait_until 240 answers "http://127.0.0.1:$port/healthz" || { echo "test-run: run did not become healthy"; tail -20 "$logs/run2.out"; exit 1; }
kill -KILL "$script"
wait_until 20 none_listening "$port" "$kport" || { echo "test-run: the children outlived a killed run script (ports $port $kport)"; exit 1; }
echo "test-run: nothing left running"

