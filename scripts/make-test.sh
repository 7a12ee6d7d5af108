#!/usr/bin/env bash
# `make test`: runs the stages in order and says how long each took, in wall time and in CPU time, so that
# where a run's time goes (computing, or waiting with the processor idle) is plain from its last lines.
#
# Some stages judge nothing by the clock and can run on the processor time the others leave idle: they run in
# the background from the start, one after another, at the idle scheduling class (SCHED_IDLE, `chrt --idle
# 0`, where the system allows it) and nice 19, so the scheduler gives the foreground stages the processor
# whenever they want it. It is not free: on a 2-core virtual machine (2026-12-05) the Kokoro tests took
# 185 s alone, 175 s beside a quick benchmark at the idle class (mostly waiting itself), and 274 s beside
# the Lambda's release build at the idle class (compiling without pause): the processors' shared caches and
# memory are still shared. Their logs go to .run/<stage>.log; a foreground stage that follows one that
# failed does not start, and the foreground waits for them all before WAIT_BEFORE.
#
#   STAGES       the foreground stages, in order
#   BACKGROUND   the background stages, in order (none may build into target/debug, whose cargo lock the
#                foreground takes: an idle-class process holding it would hold the foreground up)
#   WAIT_BEFORE  the foreground stage that needs the background's work (default: the last)
#   MAKE         the make to run each stage with
set -euo pipefail

cd "$(dirname "$0")/.."
make=${MAKE:-make}
read -ra stages <<<"${STAGES:?the foreground stages}"
read -ra background <<<"${BACKGROUND:-}"
wait_before=${WAIT_BEFORE:-${stages[-1]}}
mkdir -p .run
rm -f .run/background.times

if [ "${1:-}" = --background ]; then
  for stage in "${background[@]}"; do
    started=$(date +%s)
    if ! $make --no-print-directory "$stage" >".run/$stage.log" 2>&1; then
      echo "$stage FAILED" >>.run/background.times
      exit 1
    fi
    echo "$stage $(($(date +%s) - started))" >>.run/background.times
  done
  exit 0
fi

idle=(nice -n 19)
if chrt --idle 0 true 2>/dev/null; then idle+=(chrt --idle 0); fi
tick=$(getconf CLK_TCK)
# The CPU time of this script's children that have ended (user and system: fields 16 and 17 of its stat;
# $$, not $BASHPID, since a command substitution runs in a subshell).
children_cpu() {
  local stat
  read -ra stat <"/proc/$$/stat"
  echo $((stat[15] + stat[16]))
}

suite=$(date +%s)
rows=()
row() { rows+=("$(printf '    %-28s %6s %6s %5s' "$1" "$2" "$3" "$4")"); }
since() { echo $(($(date +%s) - $1)); }

pid=
if [ ${#background[@]} -gt 0 ]; then
  echo "==> in the background, at idle priority: ${background[*]} (logs: .run/<stage>.log)"
  # A session of its own, killed with the run however it ends; out of make's jobserver.
  setsid env -u MAKEFLAGS -u MFLAGS -u CARGO_MAKEFLAGS "${idle[@]}" "$0" --background &
  pid=$!
  trap 'kill -- -$pid 2>/dev/null || true' EXIT
fi
trap 'exit 130' INT TERM

# A background stage that failed, named with the end of its log.
background_failed() {
  local name took
  while read -r name took; do
    if [ "$took" = FAILED ]; then
      echo "==> $name (in the background) FAILED; the end of .run/$name.log:"
      tail -n 40 ".run/$name.log"
      return 0
    fi
  done < <(cat .run/background.times 2>/dev/null)
  return 1
}

for stage in "${stages[@]}"; do
  if background_failed; then exit 1; fi
  if [ -n "$pid" ] && [ "$stage" = "$wait_before" ]; then
    waited=$(date +%s)
    cpu=$(children_cpu)
    status=0
    wait "$pid" || status=$?
    pid=
    if background_failed; then exit 1; fi
    while read -r name took; do row "$name (background)" "$took" "" ""; done <.run/background.times
    [ "$status" = 0 ] || { echo "==> the background stages ended with status $status"; exit 1; }
    took=$(since "$waited")
    row "(waiting for the background)" "$took" "$((($(children_cpu) - cpu) / tick))" ""
    echo "==> the background stages ended $took s after the stages before $stage"
  fi
  started=$(date +%s)
  cpu=$(children_cpu)
  if ! $make --no-print-directory "$stage"; then
    echo "==> $stage FAILED after $(since "$started") s"
    exit 1
  fi
  took=$(since "$started")
  used=$((($(children_cpu) - cpu) / tick))
  row "$stage" "$took" "$used" "$((took > 0 ? 100 * used / (took * $(nproc)) : 0))%"
  echo "==> $stage took $took s, $used s of CPU ($(($(since "$suite") / 60)) min so far)"
done

echo "==> stage times: wall s, CPU s, share of the $(nproc) processors busy"
printf '    %-28s %6s %6s %5s\n' stage wall cpu busy
printf '%s\n' "${rows[@]}"
total=$(since "$suite")
echo "==> all tests passed in $((total / 60)) min $((total % 60)) s"
