"""The devices of one node compared: a GPU that computes wrong numbers is invisible unless it is device 0, so the
probes also run their HIGHEST computation on every device at once, and this judges each device's answer.

Two tests, per probe result: against the known answer (each device's error within its dtype's bound at HIGHEST,
or it is wrong), and against its peers (devices of one kind run one executable on one input, so they must agree
bit for bit; the one outside a strict majority differs). Where reruns on one device already differ by design (a
GPU's nondeterministic GEMMs, seen in the probe's own rerun), a bitwise difference between devices is a warning;
with two devices that disagree and no known answer against either, neither can be blamed: both are warnings.
Each device gets a verdict (`agrees`, `differs`, `wrong`) and the name of its board, for every format to show.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from envaudit import devices
from envaudit.judge import assess, classes, table
from envaudit.model import Facts, JSONDict, ProbeResult, Severity


@dataclass(frozen=True)
class DeviceProblem:
    device: int
    kind: str
    result: str
    verdict: str
    severity: Severity
    text: str

    @property
    def wrong(self) -> bool:
        """Wrong against the known answer, not only unlike its peers."""
        return self.verdict == "wrong"


def judge(result: ProbeResult, facts: Facts) -> tuple[tuple[JSONDict, ...], list[DeviceProblem]]:
    """Each device of `result` with its verdict and board, and the problems found."""
    if not result.devices:
        return (), []
    dtype = assess.run_dtype(result.metrics)
    bound = table.load().error_bound(dtype)
    varies = classes.nondeterminism_allowed(facts) and any(
        table.kind(k) == "rerun" and v not in (0, 0.0) for k, v in result.metrics.items()
    )
    counts = Counter((str(d["kind"]), str(d["digest"])) for d in result.devices)
    wrong = {int(d["id"]) for d in result.devices if not _within(d, bound)}
    wrong_kinds = {str(d["kind"]) for d in result.devices if int(d["id"]) in wrong}
    judged, problems = [], []
    for device in result.devices:
        kind, digest = str(device["kind"]), str(device["digest"])
        peers = [n for (k, _), n in counts.items() if k == kind]
        mine, others = counts[(kind, digest)], sum(peers) - counts[(kind, digest)]
        verdict, severity, text = "agrees", None, ""  # type: str, Severity | None, str
        tie = mine * 2 == sum(peers)
        if int(device["id"]) in wrong:
            verdict, severity = "wrong", "fail"
            shown = (
                f"{error:.2g}" if (error := assess.number(device.get("rel_err"))) is not None else device.get("rel_err")
            )
            text = f"{result.name}: rel_err={shown} > {bound:g}, the bound of {dtype} at HIGHEST"
        elif others and mine * 2 <= sum(peers) and not (tie and kind in wrong_kinds):
            # outside a strict majority of its kind (in a tie the known answer decides, where it can)
            verdict = "differs"
            severity = "warn" if varies or tie else "fail"
            why = "reruns on one device already differ here" if varies else "it is a tie: neither can be blamed"
            text = f"{result.name}: its bits differ from {others} other {kind} device(s)" + (
                f" ({why})" if severity == "warn" else ""
            )
        gpu = devices.board(int(device["id"]), facts) or {}
        names = {k: str(gpu[k]) for k in ("uuid", "pci_bus_id") if gpu.get(k)}  # the labels a dashboard needs
        judged.append({**device, "verdict": verdict, "board": devices.describe(int(device["id"]), kind, facts)} | names)
        if severity is not None:
            problems.append(DeviceProblem(int(device["id"]), kind, result.name, verdict, severity, text))
    return tuple(judged), problems


def _within(device: JSONDict, bound: float) -> bool:
    error = assess.number(device.get("rel_err"))
    return error is not None and 0 <= error <= bound
