"""One-line summaries of facts shared by the human formats (text and Markdown), so they never disagree."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from envaudit.model.facts import Facts
from envaudit.model.report import Finding, Report

GIB = 1024**3
_SPACES = str.maketrans({"\n": " ", "\r": " ", "\t": " "})


def clean(text: object) -> str:
    """Text from a report, safe to show on a terminal: a crafted report cannot move the cursor, retitle the window
    or reverse the text (every control or format character but a space becomes U+FFFD)."""
    return "".join(ch if ch.isprintable() else "\ufffd" for ch in str(text).translate(_SPACES))


def clean_lines(text: object) -> str:
    """Like `clean`, line by line: a block of several lines (jax's environment info) keeps its line breaks."""
    return "\n".join(clean(line) for line in str(text).splitlines())


def python_line(facts: Facts) -> str:
    py = facts.python
    if not py:
        return "not collected (a plan declares no interpreter)"
    kind = "conda" if py.get("conda") else "virtualenv" if py.get("virtualenv") else "system"
    kind = {"uv": "uv venv", "venv": "virtualenv"}.get(str(py.get("environment")), py.get("environment") or kind)
    without = ", no pip" if py.get("pip") is False else ""  # its fixes install with uv, or ensurepip first
    if "implementation" not in py and "executable" not in py:  # a plan's, or a report's: only the version stated
        return f"{py.get('version', '?')} (as stated; no interpreter was examined)"
    return f"{py.get('version', '?')} ({py.get('implementation', '?')}, {kind}{without})"


def platform_line(facts: Facts) -> str:
    """What is known of the machine; what a plan or a pasted report does not say is left out, not shown as "?"."""
    pl = facts.platform
    if not pl:
        return "not collected"
    memory, cores = pl.get("memory_total_bytes"), pl.get("cpu_logical_cores")
    cpu = " ".join([*([str(pl["cpu_model"])] if pl.get("cpu_model") else []), *([f"({cores} cores)"] if cores else [])])
    parts = [
        f"{pl.get('system') or '?'} {pl.get('machine') or ''}".strip(),
        *([str(pl["libc"])] if pl.get("libc") else []),
        *([cpu] if cpu else []),
        *([f"{memory / GIB:.1f} GiB"] if isinstance(memory, int) else []),
    ]
    return ", ".join(parts)


STATED = {"plan": "planned", "triage": "as the report states", "hook": "as imported", "live": "measured"}


def jax_line(facts: Facts) -> str:
    jx = facts.jax
    status = jx.get("status", "unknown")
    if facts.origin != "live" and status == "unknown":
        declared = {"platform": jx.get("platform"), "CUDA": jx.get("cuda_version"), "cuDNN": jx.get("cudnn_version")}
        parts = [f"{k} {v}" for k, v in declared.items() if v] + [f"x64 {'on' if jx.get('x64') else 'off'}"]
        return f"{STATED[facts.origin]}: " + ", ".join(parts)
    if status != "ok":
        return f"{status}: {jx.get('message') or ''}".strip()
    devices = jx.get("devices") or []
    kinds = sorted({str(d.get("device_kind")) for d in devices})
    cuda = f", CUDA {jx['cuda_version']}" if jx.get("cuda_version") else ""
    cudnn = f", cuDNN {jx['cudnn_version']}" if jx.get("cudnn_version") else ""
    return (
        f"{jx.get('jax_version')} / jaxlib {jx.get('jaxlib_version')} on {jx.get('platform')} "
        f"({len(devices)} device{'s' if len(devices) != 1 else ''}: {', '.join(kinds)}){cuda}{cudnn}, "
        f"x64 {'on' if jx.get('x64') else 'off'}, matmul precision {jx.get('default_matmul_precision') or 'default'}"
    )


def nvidia_line(facts: Facts) -> str:
    nv = facts.nvidia
    if facts.origin in ("plan", "triage") and nv.get("status") == "ok":
        caps = sorted({str(g.get("compute_capability")) for g in nv.get("gpus") or [] if g.get("compute_capability")})
        count = len(nv.get("gpus") or []) if nv.get("gpus_exact") else "?"
        cc = f", compute capability {', '.join(caps)}" if caps else ""
        return f"{STATED[facts.origin]}: driver {nv.get('driver_version') or '?'}, {count} GPU(s){cc}"
    if nv.get("status") != "ok":
        return f"{nv.get('status', 'unknown')}: {nv.get('message') or ''}".strip()
    gpus = nv.get("gpus") or []
    names = sorted({str(g.get("name")) for g in gpus})
    return (
        f"driver {nv.get('driver_version')} (CUDA {nv.get('cuda_driver_version')}), "
        f"{len(gpus)} GPU{'s' if len(gpus) != 1 else ''}{': ' + ', '.join(names) if names else ''}"
    )


def packages_line(facts: Facts, room: int | None = None) -> str:
    """Each audited distribution and its version; in `room` columns (a terminal's short view), as many as fit (the
    first whatever its length) and how many more."""
    said = [f"{k} {v}" for k, v in facts.packages.items()]
    if not said:
        return "none of the audited stack"
    shown: list[str] = []
    for i, one in enumerate(said):
        left = len(said) - i - 1
        line = ", ".join([*shown, one]) + (f", and {left} more" if left else "")
        if room is not None and shown and len(line) > room:
            break
        shown.append(one)
    left = len(said) - len(shown)
    return ", ".join(shown) + (f", and {left} more" if left else "")


def scope(report: Report) -> str:
    """What a verdict does not cover: quick mode never imports jax."""
    return " (jax not imported: quick mode)" if report.facts.jax.get("status") == "skipped" else ""


def counts(report: Report) -> str:
    """Root causes by severity, how many consequences are folded under them, and how many the user ignores."""
    sev = [f.severity for f in report.findings if not f.caused_by and f.counts]
    folded = sum(1 for f in report.findings if f.caused_by and f.counts)
    more = f"; {folded} consequence{'s' if folded != 1 else ''} folded under them" if folded else ""
    ignored = sum(1 for f in report.findings if not f.counts)
    more += f"; {ignored} ignored" if ignored else ""
    return f"{sev.count('fail')} fail, {sev.count('warn')} warn, {sev.count('info')} info{more}"


def roots(report: Report, *, ignored: bool = False) -> list[tuple[Finding, list[Finding]]]:
    """Each root-cause finding with the findings it causes, in report order (envaudit/judge/causes.py); a consequence
    whose root is missing (a hand-edited report) stands as a root of its own. `ignored`: those the user ignores
    (envaudit/judge/ignoring.py), else those that count."""
    shown = [f for f in report.findings if f.counts != ignored]
    ids = {f.id for f in shown}
    tops = [f for f in shown if not f.caused_by or f.caused_by not in ids]
    return [(top, [f for f in shown if f.caused_by == top.id and f is not top]) for top in tops]


def ignored_line(finding: Finding) -> str:
    """Why the user ignores it, as the formats say it."""
    return f"ignored: {finding.ignored}" if finding.ignored else "ignored (no reason given)"


def finding_parts(finding: Finding, caused: Sequence[Finding] = ()) -> list[str]:
    """A finding said in sentences, after its title, as the machine formats write it in one message: why the user
    ignores it, its detail, its fix, its consequences, its references."""
    parts = [] if finding.counts else [f"({ignored_line(finding)})"]
    parts += [finding.detail] if finding.detail else []
    parts += [f"Fix: {finding.fix}"] if finding.fix else []
    if caused:
        parts.append(f"Consequences, fixed with it: {', '.join(g.id for g in caused)}.")
    return parts + [f"See {ref}" for ref in finding.references]


def devices_to_show(devices: Sequence[Mapping[str, object]]) -> bool:
    """A probe's devices are listed one by one only when one of them does not agree with the others."""
    return any(d.get("verdict", "agrees") != "agrees" for d in devices)


def short(value: object) -> str:
    """A number in two significant digits (a non-finite one travels as text)."""
    return f"{value:.2g}" if isinstance(value, float) else str(value)


def plan_heading(report: Report) -> str:
    """What the plan's line is: one command for an environment, the requirement lines to write for a plan."""
    if lines(report):
        return "To fix the plan (the requirement lines to write, before installing):"
    return "To fix everything (one command, in this order):"


def lines(report: Report) -> bool:
    """Whether the plan's fix is requirement lines to write (a plan's, even where it has none: what no step fixes
    is said under the same heading), not a command."""
    return report.plan.fix.target.tool == "lines" or (report.facts.origin == "plan" and not report.plan.fix)


def plan_lines(report: Report) -> tuple[str, list[str]]:
    """The plan as the formats say it: the combined command ("" where nothing can be fixed by one) and what stays
    wrong after it."""
    found = report.plan
    said = []
    if found.remaining:
        wrong = ", ".join(found.remaining)
        said.append(
            f"the known releases hold no state without {wrong}: this is the least bad one"
            if found.loop
            else f"still failing after it: {wrong} (no command fixes it)"
        )
    for library, jax in found.held:
        said.append(
            f"it holds jax at {jax} for {library}, which has no release that works with a newer jax; the other "
            f"ways, in order: {library} from its repository, where a fix may have landed since its last release "
            f"(envaudit cannot see one); or without {library}: uninstall it and jax is free to move"
        )
    if found.kept:
        said.append(
            f"kept where they are, as asked (--keep): {', '.join(found.kept)}; a way out of what is left moves "
            f"{'it' if len(found.kept) == 1 else 'them'}: plan without --keep to see it"
        )
    if found.declined:
        said.append(
            f"left out: the fix of {', '.join(found.declined)} (a warning), which would move a package to an older "
            "release or a new major, or break something else; warnings never force a downgrade or a breaking "
            "release, so its own fix is there to take if you choose"
        )
    if any(name for step in found.steps for name, _ in step.fix.export):
        said.append("the variables it exports last for this shell: set them where the program runs (a job script)")
    if proof := proof_line(report):
        said.append(proof)
    return found.fix.command, said


def what_to_do(finding: Finding) -> str:
    """A finding's fix as a reply says it (model.report.Finding.todo: one wording for every format)."""
    return finding.todo


def proof_line(report: Report) -> str:
    """Whether the plan is proven, where a report has a plan and says nothing of a build: an audit's plan is the
    tables' and the probes', not yet built ("" for a plan's report, whose build rows say it, or no plan)."""
    if report.build is not None or report.proof != "unproven" or report.facts.origin not in ("live", "hook"):
        return ""
    return (
        "not proven yet: nothing was built; `envaudit fix --dry-run` builds a twin of this environment with the"
        " plan's changes and imports and calls its libraries there before anything changes (`fix` applies only a"
        " proven plan)"
    )


def build_rows(report: Report) -> list[tuple[str, str]]:
    """What a plan built and measured here (its `build`), as rows beside the facts: the stack as planned, the
    state its fix leaves, and whether the fix plan is proven; none for a report that is no plan's."""
    found = report.build
    if found is None:
        return []
    if not found.get("measured"):
        return [("built", f"not built: {found.get('reason', '')}")]
    rows = [("built", measurement_line(found.get("planned") or {}))]
    if fixed := found.get("fixed"):
        rows.append(("fixed", measurement_line(fixed)))
    if proof := found.get("proof"):
        rows.append(("proof", f"{proof}: {found.get('proof_reason', '')}"))
    return rows


def measurement_line(one: Mapping[str, object]) -> str:
    """One build in a line: for which Python, what the CPU twin left out, and what importing showed there."""
    status, python = one.get("status"), one.get("python") or "?"
    left = one.get("left_out")
    twin = f" (the CPU twin: {', '.join(map(str, left))} left out)" if isinstance(left, list) and left else ""
    if status == "not_installable":
        again = " (remembered from an earlier plan today)" if one.get("reused") else ""
        return f"uv refused it for Python {python}{twin}{again}: {one.get('reason', '')}"
    if status != "built":
        return f"not measured ({status}){twin}: {one.get('reason', '')}"
    failed = one.get("failed")
    raised = len(failed) if isinstance(failed, list) else 0
    seconds = f" in {one['build_s']:.1f} s" if isinstance(one.get("build_s"), int | float) else ""
    if one.get("reused"):
        seconds += " (measured by an earlier build of the same stack here, remembered)"
    said = f"jax {one.get('jax')}, {one.get('tried', 0)} imports tried, {raised} raised"
    return f"with uv for Python {python}{seconds}{twin}: {said}"
