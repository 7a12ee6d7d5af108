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
tick=$(getconf CLK_TCK)
times=.run/background.times
mkdir -p .run

# The CPU time, in ticks, of this script's children that have ended (user and system: fields 16 and 17
# of its stat; $$, not $BASHPID, since a command substitution runs in a subshell). A stage is the only
# child that ends while it runs (the background is no child of this script), so a difference is its own:
# the processes it waited for, however deep. One it killed and never waited for (a server a script stops
# with `kill` alone) is not counted, so a stage's CPU figure is a floor.
children_cpu() {
  local stat
  read -ra stat <"/proc/$$/stat"
  echo $((stat[15] + stat[16]))
}
since() { echo $(($(date +%s) - $1)); }

# The background: each stage's wall and CPU seconds to $times as it ends, `done` at the end.
if [ "${1:-}" = --background ]; then
  echo $$ >.run/background.pid
  for stage in "${background[@]}"; do
    started=$(date +%s)
    cpu=$(children_cpu)
    if ! $make --no-print-directory "$stage" >".run/$stage.log" 2>&1 9>&-; then
      echo "$stage FAILED" >>"$times"
      exit 1
    fi
    echo "$stage $(since "$started") $((($(children_cpu) - cpu) / tick))" >>"$times"
  done
  echo done >>"$times"
  exit 0
fi

# One run at a time in a checkout. The background inherits the lock (its stages do not), so a background
# left over from an earlier run (killed with SIGKILL, say) holds it too, rather than writing into this
# run's files.
if command -v flock >/dev/null; then
  exec 9>.run/make-test.lock
  flock -n 9 || {
    echo "==> another make test holds .run/make-test.lock in this checkout (its background's process group: $(cat .run/background.pid 2>/dev/null))"
    exit 1
  }
fi
rm -f "$times" .run/background.pid
suite=$(date +%s)
rows=()
row() { rows+=("$(printf '    %-28s %6s %6s %5s' "$1" "$2" "$3" "$4")"); }
busy() { echo "$(($1 > 0 ? 100 * $2 / ($1 * $(nproc)) : 0))%"; }

# Whether the background has ended ("done"), failed (named with the end of its log), or goes on.
background_state() {
  local name took
  while read -r name took _; do
    if [ "$name" = done ]; then echo done; return; fi
    if [ "$took" = FAILED ]; then
      echo "==> $name (in the background) FAILED; the end of .run/$name.log:" >&2
      tail -n 40 ".run/$name.log" >&2
      echo failed
      return
    fi
  done < <(cat "$times" 2>/dev/null)
  echo running
}

stop_background() {
  local group
  group=$(cat .run/background.pid 2>/dev/null) || return 0
  kill -TERM -- "-$group" 2>/dev/null || true
}

# Each stage runs in the foreground, in the terminal's process group, so that Ctrl-C reaches every process
# it started (a command started with `&` here would ignore SIGINT, and so would all below it). A signal to
# this script alone takes effect when the running stage ends.
trap 'exit 130' INT TERM
trap stop_background EXIT

if [ ${#background[@]} -gt 0 ]; then
  idle=(nice -n 19)
  if chrt --idle 0 true 2>/dev/null; then idle+=(chrt --idle 0); fi
  echo "==> in the background, at idle priority: ${background[*]} (logs: .run/<stage>.log)"
  # A session of its own (killed with the run however it ends), no child of this script (so that its CPU
  # time is not counted in a stage's), out of make's jobserver.
  (setsid env -u MAKEFLAGS -u MFLAGS -u CARGO_MAKEFLAGS "${idle[@]}" "$0" --background </dev/null >.run/background.log 2>&1 &)
  for _ in $(seq 1 100); do [ -s .run/background.pid ] && break; sleep 0.1; done
  [ -s .run/background.pid ] || { echo "==> the background did not start (.run/background.log):"; cat .run/background.log; exit 1; }
fi

for stage in "${stages[@]}"; do
  [ "$(background_state)" != failed ] || exit 1
  if [ ${#background[@]} -gt 0 ] && [ "$stage" = "$wait_before" ]; then
    waited=$(date +%s)
    while :; do
      case $(background_state) in
        done) break ;;
        failed) exit 1 ;;
      esac
      group=$(cat .run/background.pid)
      kill -0 "$group" 2>/dev/null || [ "$(background_state)" = done ] || {
        echo "==> the background stages stopped without a word (.run/<stage>.log)"
        exit 1
      }
      sleep 2
    done
    while read -r name took cpu; do
      [ "$name" = done ] || row "$name (background)" "$took" "$cpu" "$(busy "$took" "$cpu")"
    done <"$times"
    row "(waiting for the background)" "$(since "$waited")" "" ""
    echo "==> the background stages ended $(since "$waited") s after the stages before $stage"
  fi
  started=$(date +%s)
  cpu=$(children_cpu)
  status=0
  $make --no-print-directory "$stage" 9>&- || status=$?  # the lock stays with this script
  if [ "$status" != 0 ]; then
    echo "==> $stage FAILED after $(since "$started") s"
    exit 1
  fi
  took=$(since "$started")
  used=$((($(children_cpu) - cpu) / tick))
  row "$stage" "$took" "$used" "$(busy "$took" "$used")"
  echo "==> $stage took $took s, $used s of CPU ($(($(since "$suite") / 60)) min so far)"
done

echo "==> stage times: wall s, CPU s, share of the $(nproc) processors busy"
printf '    %-28s %6s %6s %5s\n' stage wall cpu busy
printf '%s\n' "${rows[@]}"
total=$(since "$suite")
echo "==> all tests passed in $((total / 60)) min $((total % 60)) s"
