#!/usr/bin/env bash
# The browser client's tests: the parser and the client's rules under Node's test runner, and the
# demo page in headless Chromium against the real local stack.
#
# Installs what is missing (Debian's chromium, the pinned playwright-core from tests/web), starts
# the Kokoro container's server and `earshot serve --web-dir web` on free ports, runs
# `node --test` on tests/web, and always stops both.
#
#   EARSHOT_BIN        the earshot binary (default: the one `make build` writes, else target/release)
#   CHROMIUM_BIN       the browser (default: /usr/bin/chromium, installed with apt-get if absent)
#   EARSHOT_URL        an earshot already running (it must serve web/); then nothing is started,
#                      and KOKORO_URL may name its Kokoro container; it must answer the named scripts
#                      `short` and `thursday` as the one started here does (see `scripts=` below)
#   UPDATE_SCREENSHOT  set to 1 to rewrite web/screenshot.png
set -euo pipefail

cd "$(dirname "$0")/.."
say() { echo "test-web: $*"; }

# The binary `make build` writes (outside the checkout by default), else one built in the checkout.
earshot=${EARSHOT_BIN:-${CARGO_TARGET_DIR:-$HOME/.cache/earshot/target}/release/earshot}
if [ -z "${EARSHOT_BIN:-}" ] && [ ! -x "$earshot" ] && [ -x target/release/earshot ]; then
  earshot=target/release/earshot
fi
chromium=${CHROMIUM_BIN:-/usr/bin/chromium}
logs=${EARSHOT_LOG_DIR:-.run/test-web}
mkdir -p "$logs"

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# --- what the tests need -------------------------------------------------------------------------

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  say "installing Node.js and npm (apt-get)"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm
fi
node_major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$node_major" -lt 20 ]; then
  say "Node.js $(node --version) is too old: the tests need Node.js 20 or later"
  exit 1
fi

if [ ! -x "$chromium" ]; then
  say "installing Debian's chromium (apt-get)"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium
fi

if [ ! -d tests/web/node_modules/playwright-core ] || [ tests/web/package-lock.json -nt tests/web/node_modules/.package-lock.json ]; then
  say "installing the pinned test dependencies (npm ci in tests/web)"
  (cd tests/web && npm ci --no-audit --no-fund --loglevel=error)
fi

# --- the stack -----------------------------------------------------------------------------------

groups=()
stop() {
  local status=$?
  trap - EXIT INT TERM
  for group in "${groups[@]}"; do
    kill -TERM -- "-$group" 2>/dev/null || true
  done
  for group in "${groups[@]}"; do
    for _ in $(seq 1 50); do kill -0 -- "-$group" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "-$group" 2>/dev/null || true
  done
  if [ "${#groups[@]}" -gt 0 ]; then say "stopped the stack"; fi
  if [ "$status" -ne 0 ] && [ "${#groups[@]}" -gt 0 ]; then
    say "failed; the last lines of the stack's logs ($logs):"
    tail -n 15 "$logs"/*.log 2>/dev/null || true
  fi
  exit "$status"
}
trap stop EXIT
trap 'exit 130' INT TERM

free_port() {
  node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })'
}

# Waits for a URL to answer 200 while the process group that serves it is alive.
wait_for() { # url what seconds group
  local url=$1 what=$2 seconds=$3 group=$4
  for _ in $(seq 1 $((seconds * 5))); do
    if curl -fsS -o /dev/null "$url" 2>/dev/null; then return 0; fi
    if ! kill -0 -- "-$group" 2>/dev/null; then say "$what stopped before it was ready"; return 1; fi
    sleep 0.2
  done
  say "$what did not answer $url within ${seconds}s"
  return 1
}

if [ -n "${EARSHOT_URL:-}" ]; then
  say "using the earshot already running at $EARSHOT_URL"
else
  if [ ! -x "$earshot" ]; then
    say "no earshot binary at $earshot: run \`make build\` or set EARSHOT_BIN"
    exit 1
  fi
  if ! "$earshot" serve --help | grep -q -- '--web-dir'; then
    say "$earshot cannot serve web/ from disk (it has no \`serve --web-dir\`): rebuild it with \`make build\`"
    exit 1
  fi

  kokoro_port=$(free_port)
  say "preparing the Kokoro container's environment (make -C infra/kokoro venv)"
  make --no-print-directory -C infra/kokoro venv
  say "starting Kokoro (onnx engine, CPU) on port $kokoro_port (log: $logs/kokoro.log)"
  KOKORO_PORT=$kokoro_port setsid make --no-print-directory -C infra/kokoro serve >"$logs/kokoro.log" 2>&1 &
  groups+=($!)
  wait_for "http://127.0.0.1:$kokoro_port/ping" "Kokoro" 180 "${groups[-1]}"
  say "Kokoro is ready"

  # Two short named answers for the tests about turns, whose length does not matter (earshot serve --script).
  scripts=(--script "short=Sure. Your order shipped this morning." --script "thursday=It should arrive on Thursday.")

  earshot_port=$(free_port)
  # The page's tests measure the model: no sentence from the sentence cache (tests/tests/cache.rs is about it).
  say "starting earshot serve --web-dir web --cache off on port $earshot_port (log: $logs/earshot.log)"
  setsid "$earshot" serve --port "$earshot_port" --kokoro-url "http://127.0.0.1:$kokoro_port" --web-dir web --cache off "${scripts[@]}" >"$logs/earshot.log" 2>&1 &
  groups+=($!)
  wait_for "http://127.0.0.1:$earshot_port/healthz" "earshot" 60 "${groups[-1]}"
  say "earshot is ready"

  export EARSHOT_URL="http://127.0.0.1:$earshot_port"
  export KOKORO_URL="http://127.0.0.1:$kokoro_port"

  # The same page against a gateway in token mode (as a deployed one in authType TOKEN), with the keys a
  # test mints its tokens with.
  token_port=$(free_port)
  export EARSHOT_TOKEN_KEYS="web=test-key-for-the-browser-tests-0123456789"
  say "starting earshot serve in token mode on port $token_port (log: $logs/earshot-token.log)"
  setsid "$earshot" serve --port "$token_port" --kokoro-url "http://127.0.0.1:$kokoro_port" --web-dir web --cache off --auth token "${scripts[@]}" >"$logs/earshot-token.log" 2>&1 &
  groups+=($!)
  wait_for "http://127.0.0.1:$token_port/healthz" "earshot (token mode)" 60 "${groups[-1]}"
  export EARSHOT_TOKEN_URL="http://127.0.0.1:$token_port"
  export EARSHOT_BIN_FOR_TOKENS="$earshot"

  # A slow machine: a second container rendering four times slower than it can, on the earlier fixed piece plan,
  # so that the voice stops inside sentences; the page's count of those stalls is checked against the
  # server's timeline.
  slow_kokoro_port=$(free_port)
  say "starting a slow Kokoro (KOKORO_SLOWDOWN=4, fixed piece plan) on port $slow_kokoro_port (log: $logs/kokoro-slow.log)"
  # Four times slower: an idle 2-core machine keeps ahead of the listener at twice slower, and the voice
  # must stop inside a sentence for the test to mean anything (the Rust twin, stalls.rs, finds the same).
  KOKORO_PORT=$slow_kokoro_port KOKORO_SLOWDOWN=4 KOKORO_PIECE_PLAN=fixed setsid make --no-print-directory -C infra/kokoro serve >"$logs/kokoro-slow.log" 2>&1 &
  groups+=($!)
  wait_for "http://127.0.0.1:$slow_kokoro_port/ping" "the slow Kokoro" 180 "${groups[-1]}"
  slow_port=$(free_port)
  # The limit on a silent voice raised well past what this container, slow on purpose, keeps quiet on a busy
  # machine: the test measures stalls, not the limit.
  setsid "$earshot" serve --port "$slow_port" --kokoro-url "http://127.0.0.1:$slow_kokoro_port" --backend-silence-timeout-ms 120000 --web-dir web --cache off >"$logs/earshot-slow.log" 2>&1 &
  groups+=($!)
  wait_for "http://127.0.0.1:$slow_port/healthz" "earshot (slow Kokoro)" 60 "${groups[-1]}"
  export EARSHOT_SLOW_URL="http://127.0.0.1:$slow_port"
fi

# --- the tests -----------------------------------------------------------------------------------

export CHROMIUM_BIN=$chromium
# What the gateway says of each conversation's end (the page's own tests read it: how an answer ended).
export EARSHOT_LOG_FILE="$logs/earshot.log"
say "running node --test on tests/web (browser: $chromium)"
# A limit on the whole run (it takes about three minutes): every test passing and then a browser that never
# closes would otherwise hold the stage until CI's own limit (seen once, in a version with two browsers).
status=0
timeout --kill-after=10 900 node --test tests/web/*.test.mjs || status=$?
if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then say "node --test did not end within 900 s"; fi
[ "$status" -eq 0 ] || exit "$status"
say "all web tests passed"
