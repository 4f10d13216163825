"""The devices of one node compared: a GPU that computes wrong numbers is invisible unless it is device 0, so the
probes also run their computation on every device at once, at HIGHEST and at the default precision (the run that
takes a GPU's tensor cores), and this judges each device's answer.

Two tests, per probe result. Against the known answer: each device's HIGHEST error within its dtype's bound, its
default error within the bound of the precision class the facts explain, or it is `wrong`. Against its peers:
devices of one kind run one executable on one input, so the ones that are not wrong must agree bit for bit; one
outside a strict majority `differs` (a failure where the platform is deterministic, a warning where a GPU's
reductions may differ by design). What is not one board's fault is not blamed on a board: several devices wrong
with the same bits are one fault of what they share (the software, a library: a rule may name it), and devices
that disagree with no majority cannot say which is right. Both become problems of the probe, as its own metrics'
are. Each device gets a verdict (`agrees`, `differs`, `wrong`) and the name of its board, for every format.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from envaudit.judge import assess, classes, table
from envaudit.model import devices
from envaudit.model.facts import Facts
from envaudit.model.report import JSONDict, ProbeResult, ProbeRun, Severity


@dataclass(frozen=True)
class DeviceProblem:
    device: int
    kind: str
    result: ProbeRun
    verdict: str
    severity: Severity
    text: str
    peers: tuple[int, ...] = ()  # two devices of its kind that agree, to compare it with (a majority again)

    @property
    def wrong(self) -> bool:
        """Wrong against the known answer, not only unlike its peers."""
        return self.verdict == "wrong"


def judge(result: ProbeResult, facts: Facts) -> tuple[tuple[JSONDict, ...], list[DeviceProblem], list[assess.Problem]]:
    """Each device of `result` with its verdict and board, the problems of single devices, and those of the probe."""
    if not result.devices:
        return (), [], []
    dtype, data = assess.run_dtype(result.metrics), table.load()
    bounds = {"": data.error_bound(dtype), "_default": data.classes[classes.precision_class(facts, dtype)].bound}
    bits = {int(d["id"]): (str(d["kind"]), str(d["digest"]), str(d.get("digest_default", ""))) for d in result.devices}
    wrong = {int(d["id"]): why for d in result.devices if (why := _beyond(d, bounds, dtype))}
    shared = {i for i in wrong if Counter(bits[j] for j in wrong)[bits[i]] > 1}  # the same wrong bits elsewhere
    votes = Counter(bits[i] for i in bits if i not in wrong)
    verdicts: dict[int, str] = {}
    problems: list[DeviceProblem] = []
    probe: list[assess.Problem] = []
    for kind in dict.fromkeys(str(d["kind"]) for d in result.devices):
        sound = [i for i in bits if bits[i][0] == kind and i not in wrong]
        top = max((votes[bits[i]] for i in sound), default=0)
        majority = next((bits[i] for i in sound if votes[bits[i]] == top), None) if top * 2 > len(sound) else None
        for i in (i for i in bits if bits[i][0] == kind):
            if i in wrong:
                verdicts[i] = "wrong"
                if i not in shared:
                    problems.append(
                        DeviceProblem(i, kind, result.run, "wrong", "fail", f"{result.run.label}: {wrong[i]}")
                    )
            elif majority is not None and bits[i] != majority:
                verdicts[i], varies = "differs", classes.nondeterminism_allowed(facts)
                others = len(sound) - votes[bits[i]]
                text = f"{result.run.label}: its bits differ from {others} other {kind} device(s)" + (
                    " (a GPU's reductions may differ by design without deterministic ops)" if varies else ""
                )
                agreeing = tuple(j for j in sound if bits[j] == majority)[:2]  # a majority holds two at least
                severity: Severity = "warn" if varies else "fail"
                problems.append(DeviceProblem(i, kind, result.run, "differs", severity, text, agreeing))
            else:
                verdicts[i] = "agrees" if majority is not None else "differs"
        if len(sound) > 1 and majority is None:
            why = (
                f"the {kind} devices {_ids(sound)} disagree bit for bit, no answer with a majority: none can be blamed"
            )
            probe.append(
                _problem(result, "digest_devices", "rerun", "warn", f"{len(sound)} answers", why, facts, dtype)
            )
    if shared:
        worst = max(shared, key=lambda i: assess.number(_device(result, i).get("rel_err")) or 0.0)
        why = (
            f"{wrong[worst]}, on devices {_ids(sorted(shared))} alike: the same wrong bits on each, a fault of "
            "what they share (the software, a library), not of one board"
        )
        probe.append(_problem(result, "rel_err_devices", "error", "fail", "wrong", why, facts, dtype))
    judged = []
    for device in result.devices:
        i = int(device["id"])
        gpu = devices.board(i, facts) or {}
        names = {k: str(gpu[k]) for k in ("uuid", "pci_bus_id") if gpu.get(k)}  # the labels a dashboard needs
        judged.append(
            {**device, "verdict": verdicts[i], "board": devices.describe(i, str(device["kind"]), facts)} | names
        )
    return tuple(judged), problems, probe


def _beyond(device: JSONDict, bounds: dict[str, float], dtype: str) -> str:
    """Why this device's answer is wrong ("" when it is not): an error beyond its run's bound."""
    for suffix, bound in bounds.items():
        if suffix and ("rel_err" + suffix) not in device:
            continue  # a report made before the default run was compared per device
        error = assess.number(device.get("rel_err" + suffix))
        if error is None or not 0 <= error <= bound:
            shown = f"{error:.2g}" if error is not None else str(device.get("rel_err" + suffix))
            where = f"the bound of {dtype} at HIGHEST" if not suffix else "the bound of its default precision class"
            return f"rel_err{suffix}={shown} > {bound:g}, {where}"
    return ""


def _problem(
    result: ProbeResult, metric: str, kind: str, severity: Severity, value: str, why: str, facts: Facts, dtype: str
) -> assess.Problem:
    """A problem of the probe, with the rule that names it (`explains`), as its own metrics' problems have."""
    rule, certain = assess.cause(result.run, kind, facts, dtype, metric)
    return assess.Problem(result.run, metric, kind, severity, value, why, rule, certain)


def _device(result: ProbeResult, i: int) -> JSONDict:
    return next(d for d in result.devices if int(d["id"]) == i)


def _ids(ids: list[int]) -> str:
    return ", ".join(map(str, ids))
