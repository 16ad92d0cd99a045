#!/usr/bin/env bash
# Install Debian packages that are missing, idempotently: `tools/install-apt.sh pkg...`.
# apt-get update runs only when something is actually missing.
set -euo pipefail
missing=()
for p in "$@"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
echo "apt: installing ${missing[*]}"
# Wait for another apt/dpkg (a parallel make job, unattended upgrades) instead of failing on its lock.
LOCK=(-o DPkg::Lock::Timeout=600)
$SUDO apt-get "${LOCK[@]}" update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get "${LOCK[@]}" install -y -qq "${missing[@]}" >/dev/null
