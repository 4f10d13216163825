#!/bin/bash
# A stand-in for LBNL NHC's driver, for tests/integration/test_nhc.py. NHC has no Debian package (`apt-cache policy
# lbnl-nhc nhc`: none) and is not vendored here, so this reproduces the conventions a check relies on, as the
# upstream driver defines them (github.com/mej/nhc at 9c4a38c: `nhc` and scripts/common.nhc):
#   - every SCRIPTS_DIR/*.nhc is sourced into this one bash process, with IFS empty while they load
#     (nhcmain_load_scripts), and pathname expansion is off afterwards (set -f);
#   - CONF lines are "TARGET || CHECK": comments (#) and empty targets or checks skipped, whitespace trimmed, the
#     TARGET a glob matched against $HOSTNAME (nhc_load_conf, mcheck's glob form); each CHECK is eval'd in this
#     same process (nhcmain_run_checks; NHC_CHECK_FORKED is 0 by default);
#   - die RET MESSAGE logs "ERROR:  nhc:  Health check failed:  MESSAGE", marks the node offline with MESSAGE
#     ($OFFLINE_NODE HOSTNAME MESSAGE), sets CHECK_DIED, and exits RET; with NHC_CHECK_ALL=1 it counts the failure
#     and returns 0 instead (die);
#   - a check that fails without calling die is died for: "Check CHECK returned RET";
#   - a watchdog signals the process with SIGALRM after TIMEOUT seconds (30 by default), whose trap dies with
#     142 "Script timed out while executing CHECK" (nhcmain_set_watchdog, the trap on signal 14);
#   - when every check passed, the node is marked online ($ONLINE_NODE HOSTNAME) and the driver exits 0; with
#     NHC_CHECK_ALL=1 and failures, it exits with their count.
#
#   nhc_driver.sh CONF SCRIPTS_DIR     (HOSTNAME, OFFLINE_NODE, ONLINE_NODE, TIMEOUT, NHC_CHECK_ALL: environment;
#                                       NHC_SLEEP: the watchdog's sleep(1) by path, so that PATH can hold nothing)
set -u

CONFFILE="$1"
INCDIR="$2"
NAME=nhc
TIMEOUT="${TIMEOUT:-30}"
NHC_CHECK_ALL="${NHC_CHECK_ALL:-0}"
FAIL_CNT=0
CHECK=""
CHECK_DIED=0
DEBUG="${DEBUG:-0}"
HOSTNAME="${HOSTNAME:?the node name}"
WATCHDOG=""

# shellcheck disable=SC2317  # called by the checks
log() { echo "$@"; }
# shellcheck disable=SC2317
dbg() { if [[ "$DEBUG" == 1 ]]; then echo "DEBUG:  $*"; fi; }

stop_watchdog() {
    if [[ -n "$WATCHDOG" ]]; then
        kill -s TERM "$WATCHDOG" 2>/dev/null
        wait "$WATCHDOG" 2>/dev/null
        WATCHDOG=""
    fi
}

die() {
    IFS=$' \t\n'
    local ret="$1"
    shift
    CHECK_DIED=1
    log "ERROR:  $NAME:  Health check failed:  $*"
    "$OFFLINE_NODE" "$HOSTNAME" "$*"
    if [[ "$NHC_CHECK_ALL" == 1 ]]; then
        FAIL_CNT=$((FAIL_CNT + 1))
        return 0
    fi
    stop_watchdog
    exit "$ret"
}

trap 'die 142 "Script timed out${CHECK:+ while executing \"$CHECK\"}."' ALRM

load_scripts() {
    local IFS='' script
    set +f
    for script in "$INCDIR"/*.nhc; do
        if [[ -e "$script" ]]; then
            # shellcheck source=/dev/null
            . "$script"
        fi
    done
    set -f
}

CHECKS=()
load_conf() {
    local line target check ws=$' \t'
    while read -r line; do
        target="${line%%||*}"
        check="${line#*||}"
        while [[ "${target##["$ws"]}" != "${target%%["$ws"]}" ]]; do
            target="${target##["$ws"]}"
            target="${target%%["$ws"]}"
        done
        while [[ "${check##["$ws"]}" != "${check%%["$ws"]}" ]]; do
            check="${check##["$ws"]}"
            check="${check%%["$ws"]}"
        done
        if [[ "${target###}" != "$target" || -z "$target" || -z "$check" || "$line" != *"||"* ]]; then
            continue
        fi
        # shellcheck disable=SC2053  # the target is a glob, matched as one
        if [[ "$HOSTNAME" == $target ]]; then
            CHECKS+=("$check")
        fi
    done <"$CONFFILE"
}

load_scripts
if [[ "$TIMEOUT" -gt 0 ]]; then
    (
        trap 'kill "$sleeper" 2>/dev/null; exit 0' TERM
        # its output is not the check's: a TERM between its start and `sleeper=$!` leaves it running, and holding
        # the caller's pipes it held a test's run open for the whole TIMEOUT (30 s once, under CI's load)
        "${NHC_SLEEP:-sleep}" "$TIMEOUT" >/dev/null 2>&1 &
        sleeper=$!
        wait "$sleeper" && kill -s ALRM $$
    ) &
    WATCHDOG=$!
fi
load_conf
for CHECK in "${CHECKS[@]}"; do
    CHECK_DIED=0
    eval "$CHECK"
    RET=$?
    if [[ "$RET" != 0 && "$NHC_CHECK_ALL" != 1 && "$CHECK_DIED" == 0 ]]; then
        log "Node Health Check failed.  Check $CHECK returned $RET"
        die "$RET" "Check $CHECK returned $RET"
    fi
done
CHECK=""
stop_watchdog
if [[ "$FAIL_CNT" -gt 0 ]]; then
    log "ERROR:  $NAME:  $FAIL_CNT health checks failed."
    exit "$FAIL_CNT"
fi
"$ONLINE_NODE" "$HOSTNAME"
exit 0
