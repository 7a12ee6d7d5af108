#!/usr/bin/env bash
# `make run`: the local stack with its embedded defaults (local Kokoro, scripted agent, demo page).
# Starts the Kokoro container's server and `earshot serve`, waits until both are healthy, prints how to
# try it, and stops both on Ctrl-C.
# `make run-aws` (PATH_MODE=aws) runs the production path instead: the AWS SDK clients against local
# stand-ins for SageMaker, Polly and Bedrock, voiced by the same local Kokoro, with an A/B split.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
port=${PORT:-8787}
kokoro_port=${KOKORO_PORT:-8080}
earshot=${EARSHOT_BIN:?EARSHOT_BIN names the earshot binary}
logs=${EARSHOT_LOG_DIR:-$root/.run}
mkdir -p "$logs"

pids=()
stop() {
  trap - INT TERM HUP EXIT
  echo
  echo "run: stopping"
  # Each child leads a process group of its own (setsid, which does not fork here: a background job of
  # a script is no group leader, so its pid is its group's id): stopping the group stops what it started.
  for pid in "${pids[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true; done
  # earshot drains its live conversations for a few seconds; anything still there after that is killed.
  for _ in $(seq 1 40); do
    alive=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [ "$alive" = 0 ] && break
    sleep 0.25
  done
  for pid in "${pids[@]}"; do kill -KILL -- "-$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap stop INT TERM HUP EXIT

# Each child also gets SIGTERM from the kernel if this script dies without running its trap (SIGKILL):
# whatever `make run` starts, it stops, however it is stopped.
# Called as `child CMD... &`: exec keeps the background job's pid, so that $! is the command's own pid
# (and its process group's id).
child() { exec setsid setpriv --pdeathsig TERM "$@"; }

wait_for() { # url what seconds
  local url=$1 what=$2 seconds=$3
  for _ in $(seq 1 $((seconds * 5))); do
    if curl -fsS -o /dev/null "$url" 2>/dev/null; then return 0; fi
    for pid in "${pids[@]}"; do
      kill -0 "$pid" 2>/dev/null || { echo "run: $what stopped; see its log in $logs"; exit 1; }
    done
    sleep 0.2
  done
  echo "run: $what did not become healthy within ${seconds}s; see its log in $logs"
  exit 1
}

if curl -fsS -o /dev/null "http://127.0.0.1:$kokoro_port/ping" 2>/dev/null; then
  echo "run: a Kokoro server already answers on port $kokoro_port; using it"
else
  echo "run: starting the Kokoro container's server (onnx engine, CPU) on port $kokoro_port (log: $logs/kokoro.log)"
  make --no-print-directory -C "$root/infra/kokoro" venv >/dev/null
  child env -C "$root/infra/kokoro" KOKORO_ENGINE=onnx KOKORO_PORT="$kokoro_port" .venv/bin/python -m kokoro_server >"$logs/kokoro.log" 2>&1 &
  pids+=($!)
  wait_for "http://127.0.0.1:$kokoro_port/ping" "the Kokoro server" 180
  echo "run: Kokoro is ready"
fi
# Which front end reads each language (misaki's Chinese one where installed, espeak-ng otherwise).
front_ends=$(curl -fsS "http://127.0.0.1:$kokoro_port/voices" 2>/dev/null \
  | python3 -c 'import json, sys; print(", ".join(f"{k} by {v}" for k, v in json.load(sys.stdin).get("front_ends", {}).items()))' 2>/dev/null || true)
[ -n "$front_ends" ] && echo "run: the container reads $front_ends"

extra=()
if [ "${PATH_MODE:-direct}" = aws ]; then
  standins=${STANDINS_BIN:?STANDINS_BIN names the earshot-standins binary}
  standins_port=${STANDINS_PORT:-8443}
  echo "run: starting the AWS stand-ins (SageMaker, Polly, Bedrock) on port $standins_port (log: $logs/standins.log)"
  # The previous run's certificate must not be taken for this one's: remove it, then wait for the new
  # one (the stand-ins write it whole, by a rename).
  rm -f "$logs/standins.pem"
  child "$standins" --port "$standins_port" --kokoro-url "http://127.0.0.1:$kokoro_port" --cert-out "$logs/standins.pem" >"$logs/standins.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 100); do [ -s "$logs/standins.pem" ] && break; sleep 0.1; done
  [ -s "$logs/standins.pem" ] || { echo "run: the stand-ins wrote no certificate; see $logs/standins.log"; exit 1; }
  export AWS_ACCESS_KEY_ID=AKIDTEST AWS_SECRET_ACCESS_KEY=secret AWS_REGION=us-east-1
  # The local container has Japanese voice packs only (they read any language it has a front end for):
  # one of them for each language, where production speaks ff_siwis and zf_xiaobei.
  # The stand-in cuts every message of a `parted-` endpoint into parts, all marked BINARY (as AWS documents a stream may).
  extra=(--backends kokoro,polly --sagemaker-endpoint parted-kokoro --kokoro-voice jf_alpha --agent bedrock
         --kokoro-language-voices fr=jf_nezumi,zh=jf_tebukuro
         --aws-endpoint "https://127.0.0.1:$standins_port" --aws-trust-pem "$logs/standins.pem"
         --ab-weights kokoro=50,polly=50 --failover)
fi

echo "run: starting earshot serve on port $port (log: $logs/earshot.log)"
child "$earshot" serve --web-dir "$root/web" --port "$port" --kokoro-url "http://127.0.0.1:$kokoro_port" "${extra[@]}" >"$logs/earshot.log" 2>&1 &
pids+=($!)
wait_for "http://127.0.0.1:$port/healthz" "earshot" 60

cat <<MSG

earshot is running at http://127.0.0.1:$port  (Ctrl-C stops it)

  open the demo page:   http://127.0.0.1:$port/
  stream a reply:       curl -N http://127.0.0.1:$port/v1/speak -d '{"prompt":"brief"}'
  hear it as a WAV:     $earshot say --url http://127.0.0.1:$port --prompt brief --out answer.wav
  compare buffering:    $earshot say --url http://127.0.0.1:$port --prompt brief --release buffered
  in French, Mandarin:  curl -N http://127.0.0.1:$port/v1/speak -d '{"prompt":"Bonjour, où en est ma commande ?"}'
                        curl -N http://127.0.0.1:$port/v1/speak -d '{"prompt":"我的订单什么时候到？"}'

MSG
wait -n "${pids[@]}"
