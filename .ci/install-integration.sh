#!/usr/bin/env bash
# Installs the Debian packages that tests/integration/ runs for real: a single-node Slurm (slurmctld, slurmd,
# slurm-client, munge), prometheus-node-exporter, prometheus (for its promtool: `check metrics` on the textfile,
# `check rules` and `test rules` on scripts/prometheus/), systemd (for `systemd-analyze verify` on scripts/nhc/'s
# units), and shellcheck for the scripts. Needs root (or sudo) and apt.
# The packages' services are NOT started: a policy-rc.d that refuses every start is put in place for the duration
# of the install when the machine has none, so no daemon is left running (the tests start their own, on 127.0.0.1).
set -euo pipefail

PACKAGES=(slurmctld slurmd slurm-client munge prometheus-node-exporter prometheus systemd shellcheck)

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
    SUDO=(sudo -n)
fi

missing=()
for pkg in "${PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$pkg")
    fi
done
if [ "${#missing[@]}" -eq 0 ]; then
    echo "install-integration: all packages already installed"
    exit 0
fi

policy=/usr/sbin/policy-rc.d
added_policy=0
if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' | "${SUDO[@]}" tee "$policy" >/dev/null
    "${SUDO[@]}" chmod 755 "$policy"
    added_policy=1
fi
cleanup() {
    if [ "$added_policy" -eq 1 ]; then
        "${SUDO[@]}" rm -f "$policy"
    fi
}
trap cleanup EXIT

export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get -o DPkg::Lock::Timeout=300 update -q
"${SUDO[@]}" apt-get -o DPkg::Lock::Timeout=300 install -y -q --no-install-recommends "${missing[@]}"
echo "install-integration: installed ${missing[*]}"
