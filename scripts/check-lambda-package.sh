#!/usr/bin/env bash
# Checks a built Lambda bootstrap: the ELF for the architecture it is deployed as, stripped, well within
# Lambda's size limits (50 MB zipped for a direct upload, 250 MB unzipped), and that it runs: started
# with a bad setting, it must stop at init naming the variable, before it asks the runtime API for work.
#   scripts/check-lambda-package.sh PATH/bootstrap x86_64|arm64
set -euo pipefail
bootstrap=$1 arch=$2
fail() { echo "lambda package: $*" >&2; exit 1; }
[ -x "$bootstrap" ] || fail "$bootstrap is missing or not executable"
machine=$(readelf -h "$bootstrap" | awk -F: '/Machine:/ {gsub(/^ +/, "", $2); print $2}')
case "$arch" in
  x86_64) [[ "$machine" == *X86-64* ]] || fail "built for '$machine', not x86_64" ;;
  arm64) [[ "$machine" == *AArch64* ]] || fail "built for '$machine', not arm64" ;;
  *) fail "unknown architecture $arch" ;;
esac
if readelf -S "$bootstrap" | grep -q '\.symtab'; then fail "not stripped (a symbol table is in the package)"; fi
size=$(stat -c %s "$bootstrap")
zipped=$(python3 -c 'import sys, zlib; print(len(zlib.compress(open(sys.argv[1], "rb").read(), 6)))' "$bootstrap")
(( size < 250 * 1024 * 1024 )) || fail "$size bytes unzipped: over Lambda's 250 MB"
(( zipped < 50 * 1024 * 1024 )) || fail "$zipped bytes zipped: over Lambda's 50 MB direct upload"
ran="not run (another processor than this machine's)"
if [ "$arch" = "$(uname -m | sed 's/aarch64/arm64/')" ]; then
  out=$(env -i EARSHOT_BACKENDS=espeak AWS_LAMBDA_RUNTIME_API=127.0.0.1:9 "$bootstrap" 2>&1 || true)
  grep -q 'EARSHOT_BACKENDS' <<<"$out" || fail "a bad EARSHOT_BACKENDS was not named at init: $out"
  ran="run: a bad setting stops it at init, named"
fi
echo "==> lambda package ($arch): $size bytes, $zipped zipped, stripped; $ran"
