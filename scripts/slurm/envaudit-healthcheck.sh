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
ENVAUDIT_LOG_FILE=/var/log/envaudit-healthcheck.log  # not /var/log/slurm: the slurm user's, so not used (below)
ENVAUDIT_LOCK_FILE=/run/envaudit-healthcheck.lock
ENVAUDIT_REASON_PREFIX="envaudit:"                 # marks the drains this script owns
SCONTROL=/usr/bin/scontrol
SLURM_CONF_PATH=/etc/slurm/slurm.conf
HOSTNAME_BIN=/bin/hostname                         # node name fallback: `hostname -s` when SLURMD_NODENAME is unset
TIMEOUT_BIN=/usr/bin/timeout
FLOCK_BIN=/usr/bin/flock
DATE_BIN=/bin/date

# Root works in /, whatever directory this was started from (slurmd's, or an operator's shell in /tmp or in a
# user's directory): `python -m` puts its working directory first on sys.path, so started in a directory another
# user can write, root ran that user's envaudit/__main__.py and logged its OK. A relative path in the settings is
# therefore one in /.
cd / || exit 3

ENVAUDIT_HEALTHCHECK_ENV="${ENVAUDIT_HEALTHCHECK_ENV:-/etc/default/envaudit-healthcheck}"
if [ -r "$ENVAUDIT_HEALTHCHECK_ENV" ]; then
    # shellcheck source=/dev/null
    . "$ENVAUDIT_HEALTHCHECK_ENV"
fi
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
export SLURM_CONF="$SLURM_CONF_PATH"

# The log and the lock are root's: nobody else reads them, nobody else writes them. Only they are made under this
# umask: envaudit runs with the caller's (see below), or node_exporter could not read the metrics it writes.
CALLER_UMASK="$(umask)"
umask 077

# This runs as root: a file it appends to must not be a link someone planted (root would append to its target, a
# secret or a system file). So it uses only a regular file of its own in a directory that only root can change: the
# directory and every one above it owned by root (or by the uid running this), none writable by group or others; a
# sticky one above (like /tmp) is fine, no one else can rename or remove our entry in it, but the file's own directory
# may not be one (anyone could plant the name there). Anything else is not used; the lines go to stderr (slurmd's log).
trusted_dir() {
    local dir d info owner perms
    dir="$(readlink -e -- "$1")" && [ -d "$dir" ] || return 1
    d="$dir"
    while :; do
        info="$(stat -c '%u %a' -- "$d" 2>/dev/null)" || return 1
        owner="${info% *}" perms="${info#* }"
        [ "$owner" -eq 0 ] || [ "$owner" -eq "$EUID" ] || return 1
        if [ $(( 8#$perms & 8#022 )) -ne 0 ]; then
            [ "$d" != "$dir" ] && [ $(( 8#$perms & 8#1000 )) -ne 0 ] || return 1
        fi
        [ "$d" = / ] && break
        d="$(dirname -- "$d")"
    done
    printf '%s\n' "$dir"
}
# append_target FILE: the path to open FILE by (its directory resolved, so that no link above it is followed later),
# after creating it if missing; fails unless that is a regular file of ours in a trusted directory.
append_target() {
    local dir target
    dir="$(trusted_dir "$(dirname -- "$1")")" || return 1
    target="${dir%/}/$(basename -- "$1")"
    if [ ! -e "$target" ] && [ ! -L "$target" ]; then
        # noclobber creates with O_EXCL, which fails on a link planted meanwhile instead of creating its target
        (set -C; : >"$target") 2>/dev/null
    fi
    [ -f "$target" ] && [ ! -L "$target" ] && [ -O "$target" ] || return 1
    printf '%s\n' "$target"
}
# opened_on FD FILE: is descriptor FD open on FILE itself (the regular file of ours, with one name, that was checked),
# not on whatever a link put in its place between the check and the open pointed to? Every later write goes through
# FD, never by name again, so a name swapped later is never followed.
opened_on() {
    local opened named
    opened="$(stat -L -c '%d:%i:%u:%h:%F' "/proc/self/fd/$1" 2>/dev/null)" || return 1
    named="$(stat -c '%d:%i:%u:%h:%F' -- "$2" 2>/dev/null)" || return 1
    [ "$opened" = "$named" ] && [[ "$opened" == *:"$EUID":1:regular* ]]
}

# The log is opened once, on descriptor 8: log() and envaudit's stderr write there. If it cannot be used, fd 8 is
# /dev/null (envaudit's stderr goes nowhere: a failed redirection must not look like a failed audit) and log() writes
# to stderr.
LOG_OK=""
if LOG_PATH="$(append_target "$ENVAUDIT_LOG_FILE")" && { exec 8>>"$LOG_PATH"; } 2>/dev/null &&
    opened_on 8 "$LOG_PATH"; then
    LOG_OK=1
else
    exec 8>/dev/null
fi

log() {
    local stamp
    stamp="$("$DATE_BIN" -u +%Y-%m-%dT%H:%M:%SZ 2>/dev/null)"
    if [ -z "$LOG_OK" ] || ! { printf '%s %s %s\n' "$stamp" "${NODE:-?}" "$*" >&8; } 2>/dev/null; then
        printf '%s %s %s\n' "$stamp" "${NODE:-?}" "$*" >&2
    fi
}

if [ -z "$LOG_OK" ]; then
    log "not logging to $ENVAUDIT_LOG_FILE: not a regular file of root's in a directory only root can change"
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
# The lock gets the log's care: root creating or opening a planted name could create a file anywhere (/etc/nologin).
if ! LOCK_PATH="$(append_target "$ENVAUDIT_LOCK_FILE")"; then
    log "unsafe lock file $ENVAUDIT_LOCK_FILE: not a regular file of root's in a directory only root can change"
    exit 3
fi
if ! { exec 9>>"$LOCK_PATH"; } 2>/dev/null || ! opened_on 9 "$LOCK_PATH"; then
    log "cannot open lock file $ENVAUDIT_LOCK_FILE"
    exit 3
fi
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
# -P (Python >= 3.11, which envaudit requires): no directory is put before the installation on sys.path, not even /.
# Not PYTHONSAFEPATH: the variable would reach the probe child and the audited interpreter, the jobs' environment.
args=(-P -m envaudit health)
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

umask "$CALLER_UMASK"  # envaudit's textfile metrics and report are for node_exporter (another user) to read
output="$("$TIMEOUT_BIN" -k 3 "$ENVAUDIT_TIMEOUT_S" "$ENVAUDIT_PYTHON" "${args[@]}" "${extra[@]}" \
    2>&8 </dev/null 8>&- 9>&-)"
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
            if "$SCONTROL" update nodename="$NODE" state=resume >&8 2>&1; then
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
        elif "$SCONTROL" update nodename="$NODE" state=drain reason="$reason" >&8 2>&1; then
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
