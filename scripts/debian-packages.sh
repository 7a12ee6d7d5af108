#!/usr/bin/env bash
# Installs the Debian packages a make target needs, each named by the command it provides, when that
# command is missing: `scripts/debian-packages.sh cmake:cmake opusdec:opus-tools`. Says what it installs.
set -euo pipefail

missing=()
for pair in "$@"; do
  command -v "${pair%%:*}" >/dev/null || missing+=("${pair#*:}")
done
[ ${#missing[@]} -eq 0 ] && exit 0

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}
echo "==> installing ${missing[*]} (apt-get)"
as_root apt-get update -qq
as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
