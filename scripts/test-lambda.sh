#!/usr/bin/env bash
# `make test-lambda`: the Lambda binary served the way Lambda serves it. Installs cargo-lambda (from
# PyPI, with ziglang) into a venv beside the build outputs (LAMBDA_TOOLS), starts the Kokoro container, the AWS stand-ins and
# moto's server with the interrupt table and an agent's key, and `cargo lambda watch` (function-URL
# semantics with response streaming) on free ports, runs the streaming and interrupt tests against the
# function URL, then the same bootstrap with an OpenAI-compatible agent, and stops everything.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
tools=${LAMBDA_TOOLS:-$HOME/.cache/earshot/tools/cargo-lambda}  # as the Makefile has it
logs=$(mktemp -d)
target=${CARGO_TARGET_DIR:-$root/target}

"${MAKE:-make}" -C "$root" --no-print-directory lambda-tools  # installs them where they are missing
export PATH="$tools/bin:$PATH"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
kokoro_port=$(free_port); standins_port=$(free_port); lambda_port=$(free_port); moto_port=$(free_port)
agents_port=$(free_port); lambda2_port=$(free_port); lambda3_port=$(free_port); lambda4_port=$(free_port)
moto="$root/tests/moto/.venv"

pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -- "-$pid" 2>/dev/null || kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM  # the EXIT trap stops everything

# Waits until a function under cargo lambda watch answers /healthz 200 (the first start builds it).
wait_healthy() { # url log
  local code=
  for _ in $(seq 1 900); do
    code=$(curl -s -o /dev/null -w '%{http_code}' "$1/healthz" 2>/dev/null || true)
    [ "$code" = 200 ] && return 0
    sleep 0.5
  done
  echo "lambda: the function at $1 did not answer; logs in $logs"; tail -20 "$2"; exit 1
}

# The AWS credentials every function gets: the stand-ins and moto accept any.
test_credentials='AWS_ACCESS_KEY_ID="AKIDTEST"
AWS_SECRET_ACCESS_KEY="secret"
AWS_REGION="us-east-1"'

# Starts the bootstrap under cargo lambda watch on a port, with an env file; its URL is left in $watched_url.
watch_function() { # port env-file log
  setsid cargo lambda watch -p earshot-lambda --invoke-port "$1" --env-file "$2" >"$3" 2>&1 &
  pids+=($!)
  watched_url="http://127.0.0.1:$1/lambda-url/bootstrap"
}

wait_for() { # url what seconds
  for _ in $(seq 1 $(($3 * 5))); do
    curl -fsS -o /dev/null "$1" 2>/dev/null && return 0
    sleep 0.2
  done
  echo "lambda: $2 did not start; logs in $logs"; tail -20 "$logs"/*.log; exit 1
}

# The container loads its model while the stand-ins, moto and the functions start; it is waited for only
# before the first function is called.
echo "lambda: starting the Kokoro container on port $kokoro_port"
setsid env KOKORO_PORT=$kokoro_port make --no-print-directory -C infra/kokoro serve >"$logs/kokoro.log" 2>&1 &
pids+=($!)

echo "lambda: building and starting the AWS stand-ins on port $standins_port"
cargo build --quiet --locked -p earshot-standins
setsid "$target/debug/earshot-standins" --port "$standins_port" --kokoro-url "http://127.0.0.1:$kokoro_port" --cert-out "$logs/standins.pem" \
  --agents-port "$agents_port" --agents-key sk-from-secret >"$logs/standins.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 50); do [ -s "$logs/standins.pem" ] && break; sleep 0.1; done

[ -x "$moto/bin/moto_server" ] || { echo "lambda: moto is missing: make moto-venv installs it"; exit 1; }
echo "lambda: starting moto's DynamoDB server on port $moto_port, with the interrupt table as the CDK app makes it"
setsid "$moto/bin/moto_server" -H 127.0.0.1 -p "$moto_port" >"$logs/moto.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do curl -s -o /dev/null "http://127.0.0.1:$moto_port" && break; sleep 0.1; done
AWS_ACCESS_KEY_ID=AKIDTEST AWS_SECRET_ACCESS_KEY=secret "$moto/bin/python" - "http://127.0.0.1:$moto_port" <<'PY'
import sys, boto3
db = boto3.client("dynamodb", endpoint_url=sys.argv[1], region_name="us-east-1")
db.create_table(TableName="interrupts", BillingMode="PAY_PER_REQUEST",
                AttributeDefinitions=[{"AttributeName": "conversation_id", "AttributeType": "S"}],
                KeySchema=[{"AttributeName": "conversation_id", "KeyType": "HASH"}])
db.update_time_to_live(TableName="interrupts", TimeToLiveSpecification={"AttributeName": "expires_at", "Enabled": True})
# The OpenAI-compatible agent's key, where a deployment keeps it.
sm = boto3.client("secretsmanager", endpoint_url=sys.argv[1], region_name="us-east-1")
sm.create_secret(Name="earshot/openai", SecretString="sk-from-secret")
# The token keys of the second function, which runs in token mode as authType TOKEN deploys it.
sm.create_secret(Name="earshot/token-keys", SecretString='{"lambda-test": "0123456789abcdef0123456789abcdef"}')
# The second function's conversation secret, as the CDK app makes one per deployment.
sm.create_secret(Name="earshot/conversation", SecretString="lambda-test-conversation-secret-0123456789abcdef0123456789")
PY

cat >"$logs/lambda.env" <<ENV
EARSHOT_BACKENDS="kokoro,polly"
EARSHOT_AGENT="bedrock"
# The stand-in cuts every message of this endpoint into parts, all marked BINARY (as AWS documents a stream may).
EARSHOT_SAGEMAKER_ENDPOINT="parted-kokoro"
EARSHOT_KOKORO_VOICE="jf_alpha"
EARSHOT_AB_WEIGHTS="kokoro=50,polly=50"
EARSHOT_AWS_ENDPOINT="https://127.0.0.1:$standins_port"
EARSHOT_AWS_TRUST_PEM="$logs/standins.pem"
EARSHOT_INTERRUPT_TABLE="interrupts"
EARSHOT_INTERRUPT_ENDPOINT="http://127.0.0.1:$moto_port"
EARSHOT_KEEP_ALIVE_MS="1000"
EARSHOT_AUTH="public"
# Anyone may call, so each caller address is an owner with limits of its own; every test here calls from
# loopback, one owner, and measures the model rather than the limits (tests/tests/public.rs tests them).
EARSHOT_MAX_CONVERSATIONS_PER_OWNER="0"
EARSHOT_MAX_CHARS_PER_OWNER_HOUR="0"
EARSHOT_MAX_INPUT_CHARS_PER_OWNER_HOUR="0"
EARSHOT_MAX_REQUESTS_PER_OWNER_MINUTE="0"
EARSHOT_CONVERSATION_SECRET="lambda-test-conversation-secret-0123456789abcdef"
# The streaming tests measure the model and its cancellation: no sentence from the cache, no warm-up loading
# the container between them (the second function keeps the cache and its warm-up, as deployed).
EARSHOT_CACHE="off"
$test_credentials
ENV

# The same bootstrap with another agent, in token mode (two bearers meet through the interrupt table): an OpenAI-compatible endpoint whose key, and the
# token keys, the function reads from Secrets Manager (moto) once at init; the stand-in refuses any other key.
cat >"$logs/lambda-openai.env" <<ENV
EARSHOT_BACKENDS="synthetic"
EARSHOT_AGENT="openai"
EARSHOT_OPENAI_BASE_URL="http://127.0.0.1:$agents_port/v1"
EARSHOT_OPENAI_MODEL="standin"
EARSHOT_AGENT_KEY_SECRET="earshot/openai"
EARSHOT_AUTH="token"
# As the CDK deploys it: the callers' own sentences, and the warm-up's shared by all.
EARSHOT_CACHE="deployment"
EARSHOT_TOKEN_KEYS_SECRET="earshot/token-keys"
EARSHOT_CONVERSATION_SECRET_ID="earshot/conversation"
EARSHOT_INTERRUPT_TABLE="interrupts"
EARSHOT_INTERRUPT_ENDPOINT="http://127.0.0.1:$moto_port"
EARSHOT_AWS_ENDPOINT="http://127.0.0.1:$moto_port"
$test_credentials
ENV
# The bootstrap as an AWS_IAM deployment configures it (EARSHOT_AUTH=none), behind a URL that
# authenticates nobody (cargo lambda's, as a URL with auth NONE would): every request is refused, and
# the refusal names the ways out. Through the Invoke API, with the IAM caller in the request context as a
# function URL writes it, two session names of one role are one owner (a budget of 40 characters an hour).
cat >"$logs/lambda-iam.env" <<ENV
EARSHOT_BACKENDS="synthetic"
EARSHOT_AGENT="scripted"
EARSHOT_CONVERSATION_SECRET="lambda-test-conversation-secret-0123456789abcdef"
EARSHOT_MAX_CHARS_PER_OWNER_HOUR="40"
$test_credentials
ENV
# A public (auth NONE) deployment with its walls as deployed: each caller address an owner with budgets
# (40 characters spoken and 2,000 sent an hour) and conversation ids of its own, kept in the table.
cat >"$logs/lambda-public.env" <<ENV
EARSHOT_BACKENDS="synthetic"
EARSHOT_AGENT="scripted"
EARSHOT_SCRIPTS="ok=Ok."
EARSHOT_AUTH="public"
EARSHOT_MAX_CHARS_PER_OWNER_HOUR="40"
EARSHOT_MAX_INPUT_CHARS_PER_OWNER_HOUR="2000"
EARSHOT_CONVERSATION_SECRET="lambda-test-conversation-secret-0123456789abcdef"
EARSHOT_INTERRUPT_TABLE="interrupts"
EARSHOT_INTERRUPT_ENDPOINT="http://127.0.0.1:$moto_port"
$test_credentials
ENV
# Built before the watchers start: a build while they watch can restart a function mid-test.
echo "lambda: building the tests and the doctor"
cargo test --quiet --locked -p earshot-e2e --test lambda_streaming --no-run
cargo build --quiet --locked -p earshot

# The three functions start at once (the first builds the bootstrap, the others wait for cargo's lock and find
# it built); each is called once it answers.
echo "lambda: cargo lambda watch on port $lambda_port (builds the bootstrap)"
watch_function "$lambda_port" "$logs/lambda.env" "$logs/watch.log"
url=$watched_url
echo "lambda: cargo lambda watch on port $lambda2_port with the OpenAI-compatible agent"
watch_function "$lambda2_port" "$logs/lambda-openai.env" "$logs/watch-openai.log"
url2=$watched_url
echo "lambda: cargo lambda watch on port $lambda3_port configured for IAM"
watch_function "$lambda3_port" "$logs/lambda-iam.env" "$logs/watch-iam.log"
url3=$watched_url
echo "lambda: cargo lambda watch on port $lambda4_port, public with per-address walls"
watch_function "$lambda4_port" "$logs/lambda-public.env" "$logs/watch-public.log"
url4=$watched_url

wait_for "http://127.0.0.1:$kokoro_port/ping" "Kokoro" 180
wait_healthy "$url" "$logs/watch.log"
echo "lambda: earshot doctor against $url: each arm (Kokoro through SageMaker, Polly) speaks, the agent (Bedrock) answers"
"$target/debug/earshot" doctor --url "$url"

echo "lambda: streaming test against $url"
EARSHOT_LAMBDA_URL="$url" EARSHOT_KOKORO_URL="http://127.0.0.1:$kokoro_port" cargo test --locked -p earshot-e2e --test lambda_streaming -- --ignored --test-threads=1 --nocapture --skip the_lambda_speaks_for_an_openai_compatible_agent --skip the_lambda_keeps_two_bearers_conversations_apart --skip the_lambda_takes_api_keys_kept_in_its_table --skip the_lambda_keeps_strangers_apart_by_their_address --skip the_lambda_budgets_what_a_stranger_sends --skip the_lambda_counts_an_assumed_role_as_one_owner_whatever_its_session_name

echo "lambda: OpenAI's Python SDK speaks through the function URL's /v1/audio/speech (every format, its default mp3 first; sse; refusals)"
"$root/bench/peer/.venv/bin/python" "$root/tests/openai/speak_with_the_sdk.py" "$url" >"$logs/openai-sdk.json"
"$root/bench/peer/.venv/bin/python" - "$logs/openai-sdk.json" <<'PY'
import json, sys
out = json.load(open(sys.argv[1]))
assert out["pcm"]["content_type"] == "audio/pcm" and out["pcm"]["bytes"] > 96_000, out
assert out["wav"]["head"] == "RIFF" and out["wav"]["format"] == "WAVE", out
assert out["sse_wav"]["last"] == "speech.audio.done" and out["sse_wav"]["first_delta_head"] == "RIFF", out
for name, kind in [("default", "audio/mpeg"), ("mp3", "audio/mpeg"), ("opus", "audio/ogg"), ("aac", "audio/aac"), ("flac", "audio/flac")]:
    assert out[name]["content_type"] == kind and out[name]["decoded"]["seconds"] > 2, (name, out)
assert out["too_long"]["status"] == 400 and out["too_long"]["code"] == "input_too_long", out
print(f"lambda: the SDK got {out['pcm']['bytes']} bytes of pcm (first chunk after {out['pcm']['first_chunk_s']:.2f} s), mp3 by default ({out['default']['decoded']['seconds']:.2f} s decoded), opus, aac, flac, wav, sse and its own errors")
PY

echo "lambda: the OpenAI-compatible agent's function, in token mode, at $url2"
wait_healthy "$url2" "$logs/watch-openai.log"
EARSHOT_LAMBDA_URL="$url2" EARSHOT_MOTO_URL="http://127.0.0.1:$moto_port" cargo test --locked -p earshot-e2e --test lambda_streaming -- --ignored --test-threads=1 --nocapture \
  the_lambda_speaks_for_an_openai_compatible_agent the_lambda_keeps_two_bearers_conversations_apart the_lambda_takes_api_keys_kept_in_its_table

echo "lambda: the function configured for IAM, called without it, at $url3"
code=
for _ in $(seq 1 900); do
  code=$(curl -s -o /dev/null -w '%{http_code}' "$url3/healthz" 2>/dev/null || true)
  [ "$code" != 000 ] && [ "$code" != 502 ] && break
  sleep 0.5
done
reply=$(curl -s -w ' %{http_code}' "$url3/v1/speak" -H 'content-type: application/json' -d '{"text":"Hello there."}')
case "$reply" in
  *'"iam_caller_missing"'*'EARSHOT_AUTH=public'*' 403') echo "lambda: an unsigned caller of an IAM deployment is refused 403 iam_caller_missing (healthz: $code)" ;;
  *) echo "lambda: an unsigned caller of an IAM deployment was not refused: $reply"; tail -20 "$logs/watch-iam.log"; exit 1 ;;
esac
[ "$code" = 403 ] || { echo "lambda: /healthz answered $code to an unsigned caller, not 403"; exit 1; }

echo "lambda: the IAM function through the Invoke API: two session names of one role share one budget"
EARSHOT_LAMBDA_INVOKE_URL="http://127.0.0.1:$lambda3_port/2015-03-31/functions/bootstrap/invocations" \
  cargo test --locked -p earshot-e2e --test lambda_streaming -- --ignored --nocapture the_lambda_counts_an_assumed_role_as_one_owner_whatever_its_session_name

echo "lambda: the public function through the Invoke API: each address (an IPv6 one by its /64) has its own budgets and ids"
wait_healthy "$url4" "$logs/watch-public.log"
EARSHOT_LAMBDA_INVOKE_URL="http://127.0.0.1:$lambda4_port/2015-03-31/functions/bootstrap/invocations" \
  cargo test --locked -p earshot-e2e --test lambda_streaming -- --ignored --nocapture the_lambda_keeps_strangers_apart_by_their_address the_lambda_budgets_what_a_stranger_sends
