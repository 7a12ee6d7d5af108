#!/usr/bin/env bash
# The end-to-end binaries (tests/tests/*.rs), two at a time where that is safe: `make test-e2e`.
#
# Run one after another they spend more time waiting than computing: measured on a 2-core machine
# (2026-12-05), 756 s of wall time for 625 CPU-seconds, the processor 41 % busy. Most of the waiting is
# in binaries about agents, tokens, stand-ins and limits (an agent's pause, a client limit, a stand-in's
# reply), which keep the model nearly idle; a few keep it busy. So the tests run in three parts:
#
#   a, b   two lanes at once, each a list of binaries run one after another beside a Kokoro container
#          of its own (scripts/with-kokoro.sh), so that a binary that reads its container's counters sees
#          only its own lane's work: lane a the library's own unit tests, then the binaries that keep the
#          model busiest; lane b those that mostly wait, then the rest (listed in no part), so that the
#          two lanes end near each other;
#   alone  then the binaries whose subject is the machine's own speed (the speed probe, stalls on a
#          slowed container), with nothing beside them.
#
# Every binary runs in exactly one part: a name that is no binary, or one named twice, stops the run.
# Each line of a lane's output starts with the lane's name; the whole of each lane is also kept in
# .run/e2e/<lane>.log.
#
#   E2E_LANES=1  one binary at a time, as before (the same container for all)
set -euo pipefail

cd "$(dirname "$0")/.."

# Wall and CPU seconds of each alone, one after another (2026-12-05): aws_paths 91/89, hardening 137/101,
# languages 62/103; ab 27/12, agents 70/26, cache 39/10, tokens 38/4, formats 14/17, interrupts 14/4,
# endings 8/0, aws_health 5/4; local_stack 55/72, words 42/72; speed_probe 21/17, stalls 133/94.
lane_a=(aws_paths hardening languages)
waiting=(ab agents aws_health cache endings formats interrupts lambda_streaming sigv4 tokens)
alone=(speed_probe stalls)

all=()
for file in tests/tests/*.rs; do all+=("$(basename "$file" .rs)"); done
lane_b=("${waiting[@]}")
for name in "${all[@]}"; do
  case " ${lane_a[*]} ${waiting[*]} ${alone[*]} " in *" $name "*) ;; *) lane_b+=("$name") ;; esac
done
named=("${lane_a[@]}" "${waiting[@]}" "${alone[@]}")
for name in "${named[@]}"; do
  case " ${all[*]} " in *" $name "*) ;; *) echo "test-e2e: no binary tests/tests/$name.rs (named in scripts/test-e2e.sh)"; exit 1 ;; esac
done
twice=$(printf '%s\n' "${named[@]}" | sort | uniq -d)
[ -z "$twice" ] || { echo "test-e2e: named in two parts of scripts/test-e2e.sh: $twice"; exit 1; }

# `cargo test` for some binaries, each given as --test NAME (an option such as --lib as it is), one test
# at a time.
tests() {
  local args=()
  for name in "$@"; do
    case $name in --*) args+=("$name") ;; *) args+=(--test "$name") ;; esac
  done
  cargo test --locked -p earshot-e2e "${args[@]}" -- --test-threads=1
}

if [ "${E2E_LANES:-2}" = 1 ]; then
  exec scripts/with-kokoro.sh cargo test --locked -p earshot-e2e -- --test-threads=1
fi

mkdir -p .run/e2e
# A lane: its binaries beside a container of its own; each line marked with the lane's name.
lane_body() {
  local name=$1
  shift
  EARSHOT_LOG_DIR=.run/e2e/$name scripts/with-kokoro.sh bash -c "$(declare -f tests); tests $*" 2>&1 |
    tee ".run/e2e/$name.log" | sed -u "s/^/[$name] /"
}
# Started with `&`, so in a process group of its own: a TERM to this script reaches it through stop(). A
# SIGKILL cannot be passed on, so the lane learns of this script's end from the kernel (setpriv's parent-death
# signal, kept across exec) and sends TERM to its whole group: the container and the tests stop as after a TERM.
# The new shell keeps pipefail (lane_body's status is the tests', not sed's) and takes the names quoted.
lane() {
  exec setpriv --pdeathsig TERM bash -o pipefail -c "$(declare -f tests lane_body)
    trap 'trap \"\" TERM; kill -TERM 0 2>/dev/null; exit 130' TERM
    lane_body $(printf '%q ' "$@") &
    wait \$!"
}

# Each lane in a process group of its own (job control), so that a signal reaches the whole of it.
set -m
lanes=()
stop() { for group in "${lanes[@]}"; do kill -TERM -- "-$group" 2>/dev/null || true; done; }
trap 'stop; wait; exit 130' INT TERM

started=$(date +%s)
echo "test-e2e: two lanes at once: a (${lane_a[*]}) and b (${lane_b[*]})"
lane a --lib "${lane_a[@]}" &
lanes+=($!)
lane b "${lane_b[@]}" &
lanes+=($!)
failed=()
if ! wait "${lanes[0]}"; then failed+=(a); fi
if ! wait "${lanes[1]}"; then failed+=(b); fi
lanes=()
echo "test-e2e: both lanes ended in $(($(date +%s) - started)) s"
if [ ${#failed[@]} -gt 0 ]; then
  echo "test-e2e: FAILED in lane(s) ${failed[*]}: the whole output of each is in .run/e2e/<lane>.log"
  exit 1
fi

echo "test-e2e: alone: ${alone[*]}"
lane alone "${alone[@]}" &
lanes+=($!)
wait "${lanes[0]}" || { echo "test-e2e: FAILED alone: .run/e2e/alone.log"; exit 1; }
