#!/bin/bash
# envaudit-npd-plugin.sh -- node-problem-detector custom plugin for the EnvAuditProblem condition.
#
#   envaudit-npd-plugin.sh [STATUS_FILE [MAX_AGE_S]]
#
# The envaudit DaemonSet (envaudit-daemonset.yaml) runs `envaudit health --status-file STATUS_FILE` on the node with
# the GPUs, which replaces after each run STATUS_FILE (default
# /var/lib/node_exporter/textfile/envaudit-health.status):
#   line 1: "<exit code> <unix time of the run>"
#   line 2: envaudit's one line (at most 80 characters)
# This plugin only reads that file, so node-problem-detector needs neither the GPUs nor the JAX stack. It follows the
# plugin protocol: the line on stdout (NPD keeps max_output_length = 80 characters of it), exit 0 OK (envaudit
# exit 0), 1 NonOK (envaudit exit 1: a problem), anything else Unknown -- envaudit's 2 and 3, no result yet, or a
# result older than MAX_AGE_S seconds (default 900: three DaemonSet intervals), which means the DaemonSet is not
# running or hangs.
readonly OK=0
readonly NONOK=1
readonly UNKNOWN=2

status_file="${1:-/var/lib/node_exporter/textfile/envaudit-health.status}"
max_age="${2:-900}"

if [ ! -r "$status_file" ]; then
    echo "envaudit: no result yet (${status_file##*/} missing)"
    exit "$UNKNOWN"
fi
rc="" stamp="" line=""
{
    read -r rc stamp
    IFS= read -r line
} <"$status_file"
case "$rc:$stamp" in
    [0-9]*:[0-9]*) ;;
    *)
        echo "envaudit: unreadable status file ${status_file##*/}"
        exit "$UNKNOWN"
        ;;
esac
case "$rc$stamp" in
    *[!0-9]*)
        echo "envaudit: unreadable status file ${status_file##*/}"
        exit "$UNKNOWN"
        ;;
esac

now="$(date +%s)"
age=$((now - stamp))
if [ "$age" -gt "$max_age" ]; then
    echo "envaudit: last result is ${age}s old; is the envaudit DaemonSet running?"
    exit "$UNKNOWN"
fi

printf '%s\n' "${line:0:80}"
case "$rc" in
    0) exit "$OK" ;;
    1) exit "$NONOK" ;;
    *) exit "$UNKNOWN" ;;
esac
