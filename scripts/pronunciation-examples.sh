#!/usr/bin/env bash
# The audio examples of docs/pronunciation.md, made by the real model: a local Kokoro container, `earshot
# serve` in front of it with the examples' lexicon, and `earshot say` writing each answer as Ogg Opus into
# docs/audio/. Run it again after changing the examples: `scripts/pronunciation-examples.sh` (the container's
# venv and a build of earshot must exist: `make test` or `make run` made both).
set -euo pipefail

cd "$(dirname "$0")/.."
earshot=${CARGO_TARGET_DIR:-target}/debug/earshot
out=docs/audio
mkdir -p "$out"

if [ -z "${EARSHOT_E2E_KOKORO_URL:-}" ]; then
  exec scripts/with-kokoro.sh "$0" "$@"
fi

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$earshot" serve --port "$port" --backends kokoro --kokoro-url "$EARSHOT_E2E_KOKORO_URL" --cache off \
  --lexicon "$out/lexicon.txt" >"$out/.serve.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true; rm -f "$out/.serve.log"' EXIT
for _ in $(seq 1 100); do curl -fsS -o /dev/null "http://127.0.0.1:$port/healthz" 2>/dev/null && break; sleep 0.2; done

say() {
  local name=$1
  shift
  echo "pronunciation-examples: $name"
  "$earshot" say --url "http://127.0.0.1:$port" --output-format opus_48000 --out "$out/$name.opus" "$@" >/dev/null
}

say lexicon-ipa --text "Ask Nguyen about your order."
say lexicon-words --text "Run kubectl to see the pods."
say ssml-break --markup ssml --text '<speak>Your order shipped.<break time="1s"/>It arrives on Thursday.</speak>'
say ssml-say-as --markup ssml --text '<speak>Your code is <say-as interpret-as="characters">EKS</say-as> <say-as interpret-as="digits">42</say-as>.</speak>'
say ssml-sub --markup ssml --text '<speak>Ask <sub alias="Doctor Smith">Dr. Smith</sub> at <sub alias="the front desk">FD</sub>.</speak>'
say speakable --text "Call (555) 123-4567 or visit example.com/help before 5:30 pm."
say rate-slow --rate 0.75 --text "Your order shipped this morning."
say rate-fast --rate 1.5 --text "Your order shipped this morning."
