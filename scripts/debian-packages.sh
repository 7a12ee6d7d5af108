#!/usr/bin/env bash
# Installs the Debian packages a make target needs, each named by the command it provides, when that
# command is missing: `scripts/debian-packages.sh cmake:cmake opusdec:opus-tools`. Says what it installs.
# On macOS (a first deploy from a laptop) the same commands come from Homebrew, where it is installed
# (`brew install cmake opus-tools`: Homebrew's names are Debian's for these); without it, says what to install.
set -euo pipefail

missing=()
commands=()
for pair in "$@"; do
  command -v "${pair%%:*}" >/dev/null || { missing+=("${pair#*:}"); commands+=("${pair%%:*}"); }
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(uname -s)" = Darwin ]; then
  if command -v brew >/dev/null; then
    echo "==> installing ${missing[*]} (Homebrew)"
    brew install "${missing[@]}"
    exit 0
  fi
  echo "earshot: ${commands[*]} missing, and Homebrew is not installed: install Homebrew (https://brew.sh), then 'brew install ${missing[*]}'" >&2
  exit 1
fi
if ! command -v apt-get >/dev/null; then
  echo "earshot: ${commands[*]} missing: install ${missing[*]} with this system's package manager (apt-get is not here)" >&2
  exit 1
fi

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}
echo "==> installing ${missing[*]} (apt-get)"
as_root apt-get update -qq
as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
