#!/usr/bin/env bash
# `make run` and `make run-aws` stop everything they start, however they are stopped, and the AWS path
# never trusts the previous run's certificate: the local run script itself under test.
#   1. run-aws with a stale certificate left in its log folder: it must speak through the stand-ins
#      (TLS with this run's certificate), then SIGTERM to its process group must leave nothing running;
#   2. run, then SIGKILL to the script alone (no trap can run): its children must still stop;
#   3. `make run` as a new user types it: it builds the lean binary (no AWS SDK), says how long that
#      took, becomes healthy, its printed "hear it as a WAV" command writes a WAV of the brief answer,
#      the binary it ran refuses AWS settings saying why, and Ctrl-C (SIGINT to the group) stops it all.
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


echo "test-run: 3. make run as typed: the lean build, the printed command, Ctrl-C"
port=$(free_port) kport=$(free_port)
# A background job of a script starts with SIGINT ignored, which no trap can undo: it is restored first, as
# a terminal's foreground job has it.
python3 -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execvp(sys.argv[1], sys.argv[1:])' setsid env PORT="$port" KOKORO_PORT="$kport" EARSHOT_LOG_DIR="$logs" make --no-print-directory -C "$root" run > "$logs/run3.out" 2>&1 &
make_pid=$!
fail3() { echo "test-run: $1"; tail -30 "$logs/run3.out"; kill -KILL -- "-$make_pid" 2>/dev/null; exit 1; }
# The build is part of what is timed here: a new user waits for it too.
started=$(date +%s)
healthy_or_ended() { answers "http://127.0.0.1:$port/healthz" || ! kill -0 "$make_pid" 2>/dev/null; }
wait_until 900 healthy_or_ended && answers "http://127.0.0.1:$port/healthz" || fail3 "make run did not become healthy"
echo "test-run: make run answered after $(( $(date +%s) - started )) s"
grep -q '^==> earshot built in [0-9]* s' "$logs/run3.out" || fail3 "make run did not say how long the build took"
# The command it prints just after it is healthy, run as printed (the WAV written into the test's folder).
wait_until 30 grep -q '^  hear it as a WAV:' "$logs/run3.out" || fail3 "make run printed no way to hear the answer"
say=$(sed -n 's/^  hear it as a WAV: *//p' "$logs/run3.out")
read -r -a say_words <<<"${say/answer.wav/$logs/answer.wav}"
"${say_words[@]}" > "$logs/say.out" 2>&1 || { cat "$logs/say.out"; fail3 "the printed command failed: $say"; }
[ "$(head -c 4 "$logs/answer.wav")" = RIFF ] && [ "$(stat -c %s "$logs/answer.wav")" -gt 48000 ] \
  || fail3 "the printed command wrote no WAV of the answer ($(stat -c %s "$logs/answer.wav" 2>/dev/null || echo 0) bytes)"
# The binary make run built has no AWS SDK: asked for Polly, it refuses at once and says what to run.
bin=${say_words[0]}
if refusal=$("$bin" serve --port "$(free_port)" --web-dir "" --backends kokoro,polly 2>&1); then fail3 "the lean binary started with Polly"; fi
grep -q "built without it" <<<"$refusal" && grep -q "make run-aws" <<<"$refusal" || fail3 "the lean binary's refusal does not say why: $refusal"
kill -INT -- "-$make_pid"
wait_until 30 bash -c "! kill -0 $make_pid 2>/dev/null" || fail3 "make run did not end on Ctrl-C"
wait_until 20 none_listening "$port" "$kport" || fail3 "something still listens after Ctrl-C (ports $port $kport)"
echo "test-run: make run spoke the brief answer into a WAV, its binary refuses AWS settings, Ctrl-C left nothing running"
