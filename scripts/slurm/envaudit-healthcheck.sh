#!/bin/bash
# envaudit-healthcheck.sh -- a Slurm HealthCheckProgram that runs `envaudit health` and drains or resumes the node.
#
# slurmd runs this as root with no PATH and no SLURM_CONF, with only SLURMD_NODENAME set, and gives it 60 s. So every
# program is named by an absolute path, set below or in an env file (a bash fragment of VAR=value lines) read from
# $ENVAUDIT_HEALTHCHECK_ENV, else /etc/default/envaudit-healthcheck. slurmd logs a non-zero exit as
# `health_check failed: rc:N` and does nothing else, so this script acts itself:
#   envaudit exit 0 (OK)       resume the node, but only if it is drained with a reason starting "envaudit:" (one
#                              this script set); a node drained by anyone else for anything else is left alone
#   envaudit exit 1 (problem)  drain: scontrol update nodename=NODE state=drain reason="envaudit: <envaudit's line>";
#                              a node already drained for another reason keeps that reason
#   anything else              (2 bad usage, 3 could not audit, a timeout) log it; neither drain nor resume
# It exits with envaudit's code (0 also when another instance already runs: the check is then skipped).
# Every run appends one line to $ENVAUDIT_LOG_FILE; envaudit's stderr goes there too.

# ---- settings (override in the env file) ---------------------------------------------------------------------------
ENVAUDIT_PYTHON=/opt/envaudit/bin/python           # the Python whose environment is audited (jobs' environment)
ENVAUDIT_PYTHONPATH=""                             # PYTHONPATH for that Python ("" keeps it unset)
ENVAUDIT_HEALTH_ARGS=""                            # extra arguments, e.g. "--skip-probe ntk_nt --timeout 20"
ENVAUDIT_PROMETHEUS_DIR=""                         # e.g. /var/lib/prometheus/node-exporter ("" = no metrics)
ENVAUDIT_TIMEOUT_S=55                              # hard bound on envaudit (slurmd kills the check at 60 s)
ENVAUDIT_LOG_FILE=/var/log/slurm/envaudit-healthcheck.log
ENVAUDIT_LOCK_FILE=/run/envaudit-healthcheck.lock
ENVAUDIT_REASON_PREFIX="envaudit:"                 # marks the drains this script owns
SCONTROL=/usr/bin/scontrol
SLURM_CONF_PATH=/etc/slurm/slurm.conf
HOSTNAME_BIN=/bin/hostname                         # node name fallback: `hostname -s` when SLURMD_NODENAME is unset
TIMEOUT_BIN=/usr/bin/timeout
FLOCK_BIN=/usr/bin/flock
DATE_BIN=/bin/date

ENVAUDIT_HEALTHCHECK_ENV="${ENVAUDIT_HEALTHCHECK_ENV:-/etc/default/envaudit-healthcheck}"
if [ -r "$ENVAUDIT_HEALTHCHECK_ENV" ]; then
    # shellcheck source=/dev/null
    . "$ENVAUDIT_HEALTHCHECK_ENV"
fi
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
export SLURM_CONF="$SLURM_CONF_PATH"

umask 077  # the log and the lock are root's: nobody else reads them, nobody else writes them

# This runs as root: a file it appends to must not be a link someone planted (root would append to its target, a
# secret or a system file), so it appends only to a regular file of its own, in a directory nobody but its owner
# can write to (mode without group or other write). Anything else is not used; the lines go to stderr (slurmd's log).
safe_to_append() {
    local file="$1" dir perms
    dir="$(dirname -- "$file")"
    { [ -d "$dir" ] && [ ! -L "$dir" ]; } || return 1
    perms="$(stat -c %a -- "$dir" 2>/dev/null)" || return 1
    [ $(( 8#$perms & 8#022 )) -eq 0 ] || return 1
    if [ -e "$file" ] || [ -L "$file" ]; then
        [ -f "$file" ] && [ ! -L "$file" ] && [ -O "$file" ] || return 1
    fi
    return 0
}
LOG_TO=""
if safe_to_append "$ENVAUDIT_LOG_FILE" && { : >>"$ENVAUDIT_LOG_FILE"; } 2>/dev/null; then
    LOG_TO="$ENVAUDIT_LOG_FILE"
fi

log() {
    local stamp
    stamp="$("$DATE_BIN" -u +%Y-%m-%dT%H:%M:%SZ 2>/dev/null)"
    if [ -z "$LOG_TO" ] || ! { printf '%s %s %s\n' "$stamp" "${NODE:-?}" "$*" >>"$LOG_TO"; } 2>/dev/null; then
        printf '%s %s %s\n' "$stamp" "${NODE:-?}" "$*" >&2
    fi
}

# envaudit's stderr goes to the log; if the log cannot be used, nowhere (a failed redirection must not look like a
# failed audit).
ERR_LOG="${LOG_TO:-/dev/null}"
if [ -z "$LOG_TO" ]; then
    log "not logging to $ENVAUDIT_LOG_FILE: not a regular file of root's in a directory only its owner can write"
fi

NODE="${SLURMD_NODENAME:-}"
if [ -z "$NODE" ]; then
    NODE="$("$HOSTNAME_BIN" -s 2>/dev/null)"
fi
if [ -z "$NODE" ]; then
    log "cannot tell the node name (no SLURMD_NODENAME, no hostname); nothing done"
    exit 3
fi

# One check at a time: slurmd may start one (interval, registration, `scontrol reconfigure`) while one still runs.
safe_to_append "$ENVAUDIT_LOCK_FILE" || { log "unsafe lock file $ENVAUDIT_LOCK_FILE (see the log file)"; exit 3; }
exec 9>>"$ENVAUDIT_LOCK_FILE" || { log "cannot open lock file $ENVAUDIT_LOCK_FILE"; exit 3; }
if ! "$FLOCK_BIN" -n 9; then
    log "another check is running; skipped"
    exit 0
fi

# The node's current state and drain reason, from `scontrol show node` (lines `   State=IDLE+DRAIN ...` and
# `   Reason=text [user@time]`).
node_state() {
    local out line
    STATE="" REASON=""
    out="$("$SCONTROL" show node "$NODE" 2>/dev/null)" || return 1
    while IFS= read -r line; do
        line="${line#"${line%%[![:space:]]*}"}"
        case "$line" in
            State=*)
                STATE="${line#State=}"
                STATE="${STATE%% *}"
                ;;
            Reason=*)
                REASON="${line#Reason=}"
                REASON="${REASON% \[*\]}"
                ;;
        esac
    done <<<"$out"
    return 0
}

is_drained() {
    case "+$STATE+" in
        *+DRAIN+* | *+DRAINED+* | *+DRAINING+*) return 0 ;;
    esac
    return 1
}

ours() {
    case "$REASON" in
        "$ENVAUDIT_REASON_PREFIX"*) return 0 ;;
    esac
    return 1
}

# ---- run the audit --------------------------------------------------------------------------------------------------
args=(-m envaudit health)
if [ -n "$ENVAUDIT_PROMETHEUS_DIR" ]; then
    args+=(--prometheus-dir "$ENVAUDIT_PROMETHEUS_DIR")
fi
extra=()
if [ -n "$ENVAUDIT_HEALTH_ARGS" ]; then
    read -r -a extra <<<"$ENVAUDIT_HEALTH_ARGS"
fi
if [ -n "$ENVAUDIT_PYTHONPATH" ]; then
    export PYTHONPATH="$ENVAUDIT_PYTHONPATH"
fi

output="$("$TIMEOUT_BIN" -k 3 "$ENVAUDIT_TIMEOUT_S" "$ENVAUDIT_PYTHON" "${args[@]}" "${extra[@]}" \
    2>>"$ERR_LOG" </dev/null 9>&-)"
rc=$?
line="${output%%$'\n'*}"
line="${line//[[:cntrl:]]/ }"
line="${line:0:80}"
# Exit 1 without envaudit's line is not envaudit's verdict: Python exits 1 on an uncaught exception, e.g. when envaudit
# is not importable. That is a broken check, not a broken node: report Unknown, do not drain.
if [ "$rc" -eq 1 ] && [ "${line#envaudit }" = "$line" ]; then
    log "exit 1 without an envaudit line (python failed before auditing?): treated as could not audit"
    rc=3
fi

case "$rc" in
    0)
        if ! node_state; then
            log "rc=0 OK; cannot read the node's state with $SCONTROL: $line"
        elif is_drained && ours; then
            if "$SCONTROL" update nodename="$NODE" state=resume >>"$ERR_LOG" 2>&1; then
                log "rc=0 OK; resumed (was drained: $REASON): $line"
            else
                log "rc=0 OK; scontrol could not resume the node: $line"
            fi
        elif is_drained; then
            log "rc=0 OK; node stays drained, reason not ours ($REASON): $line"
        else
            log "rc=0 OK: $line"
        fi
        ;;
    1)
        reason="$ENVAUDIT_REASON_PREFIX $line"
        if ! node_state; then
            STATE="" REASON=""
        fi
        if is_drained && ! ours; then
            log "rc=1 FAIL; node already drained for another reason ($REASON), left as is: $line"
        elif is_drained && [ "$REASON" = "$reason" ]; then
            log "rc=1 FAIL; already drained with this reason: $line"
        elif "$SCONTROL" update nodename="$NODE" state=drain reason="$reason" >>"$ERR_LOG" 2>&1; then
            log "rc=1 FAIL; drained: $line"
        else
            log "rc=1 FAIL; scontrol could not drain the node: $line"
        fi
        ;;
    124 | 137)
        log "rc=$rc envaudit did not finish within ${ENVAUDIT_TIMEOUT_S}s; node state unchanged"
        rc=3
        ;;
    *)
        log "rc=$rc could not audit (unknown), node state unchanged: ${line:-no output}"
        ;;
esac
exit "$rc"
