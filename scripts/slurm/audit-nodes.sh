#!/bin/bash
# audit-nodes.sh -- run `envaudit --format json` once on each of many Slurm nodes (one srun step, one task per node)
# and collect the reports, one file per node, in a directory on THIS machine, ready for `envaudit compare DIR`.
#
#   audit-nodes.sh [-o DIR] [-p PYTHON] [-a "ENVAUDIT ARGS"] [-- SRUN ARGS...]
#   audit-nodes.sh -o reports -- -N 16 -p gpu --gres=gpu:1        # 16 nodes of partition gpu
#   audit-nodes.sh -a "--probe dense_chain --probe conv_chain" -- -w node[01-04]
#
# -o DIR     where the reports go (default ./envaudit-reports-YYYYmmddTHHMMSS); written as DIR/<node>.json
# -p PYTHON  the Python on the nodes whose environment is audited (default python3 from the job's PATH); srun
#            exports this shell's environment (PATH, PYTHONPATH, virtualenv) to the tasks, as for any job
# -a ARGS    arguments for `envaudit audit` (default: none, the full audit with its default probes)
# SRUN ARGS  node selection and resources; --ntasks-per-node=1 is always added
#
# No shared filesystem is needed: srun brings each task's stdout back here, labelled with the task number (--label),
# and this script splits it per node. Exit 0 when every task left a report (whatever the reports say), 1 when some
# did not (their stderr is in DIR/srun.err), 2 on bad usage.
set -u

out="envaudit-reports-$(date +%Y%m%dT%H%M%S)"
python=python3
audit_args=""
srun_bin="${SRUN:-srun}"

usage() {
    sed -n '5,7p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
}
while getopts "o:p:a:h" opt; do
    case "$opt" in
        o) out="$OPTARG" ;;
        p) python="$OPTARG" ;;
        a) audit_args="$OPTARG" ;;
        *) usage ;;
    esac
done
shift $((OPTIND - 1))
if [ "${1:-}" = "--" ]; then
    shift
fi

mkdir -p "$out" || exit 2
raw="$out/srun.out"

# Each task prints a header line naming its node, then the report. The remote command is passed as arguments (no
# string is re-parsed on the node except ENVAUDIT ARGS, which is split on whitespace). envaudit runs in / (a relative
# PYTHON is made absolute first, in the task's directory) and with -P (Python >= 3.11, as envaudit requires):
# `python -m` puts its working directory first on sys.path, so run by root from a directory another user can write,
# it ran that user's envaudit/__main__.py on every node.
# shellcheck disable=SC2016  # expanded by the remote bash, on purpose
remote='printf "envaudit-node %s\n" "$(hostname -s)"; py="$1"; case "$py" in /*) ;; */*) py="$PWD/$py" ;; esac
cd / || exit 3; read -r -a a <<<"$2"; exec "$py" -P -m envaudit audit --format json "${a[@]}"'
"$srun_bin" --ntasks-per-node=1 --label "$@" /bin/bash -c "$remote" envaudit-task "$python" "$audit_args" \
    >"$raw" 2>"$out/srun.err" </dev/null
srun_rc=$?

# Split "TASK: line" into per-task files, then name each file after the node in its header line.
tmp="$(mktemp -d "$out/.split.XXXXXX")" || exit 2
while IFS= read -r line; do
    task="${line%%:*}"
    task="${task// /}"
    case "$task" in
        '' | *[!0-9]*) continue ;;
    esac
    printf '%s\n' "${line#*: }" >>"$tmp/$task"
done <"$raw"

reports=0
missing=0
for f in "$tmp"/*; do
    [ -e "$f" ] || continue
    IFS= read -r header <"$f"
    node="${header#envaudit-node }"
    if [ "$header" = "$node" ] || [ -z "$node" ]; then
        node="task-$(basename "$f")"
    fi
    tail -n +2 "$f" >"$out/$node.json"
    if grep -q '"schema": *"envaudit/report/v1"' "$out/$node.json"; then
        reports=$((reports + 1))
    else
        echo "audit-nodes: no report from $node (see $out/srun.err)" >&2
        missing=$((missing + 1))
    fi
done
rm -rf "$tmp"
rm -f "$raw"

echo "audit-nodes: $reports report(s) in $out (srun exit $srun_rc); compare them with: envaudit compare $out"
if [ "$reports" -eq 0 ] || [ "$missing" -gt 0 ]; then
    exit 1
fi
exit 0
