"""`envaudit plan`: evaluate pinned requirements before anything is installed, without network.

The plan is turned into an ordinary facts snapshot (`origin: plan`), so the same rules evaluate a plan and a
live machine. What pins imply is derived, not guessed: `jax[cuda12]==V` means jaxlib V on CUDA 12; a jaxlib local
label (`+cuda102`) says its CUDA. What the plan does not say is jax's default, as a fresh process has it: x64 off,
the default matmul precision, no environment variable set but those given with `--env` (which set x64 and the
precision as jax reads them). Anything that cannot be evaluated exactly is a PlanError: exit 2, one line.
"""

from __future__ import annotations

import argparse
import re

from packaging.version import InvalidVersion, Version

from envaudit import fixes
from envaudit.exitcodes import BadInput
from envaudit.facts import GPU, Facts, JaxFacts, NvidiaFacts, PythonFacts
from envaudit.redact import select_env
from envaudit.rules.accessors import env_flag
from envaudit.scope import canonicalize_name

PLATFORMS = ("cpu", "cuda", "rocm", "tpu")


class PlanError(BadInput, ValueError):
    """A requirement or flag that a plan cannot evaluate; the message is one line."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("requirements", nargs="+", metavar="REQUIREMENT", help="pinned requirements, e.g. jax==0.4.25")
    p.add_argument("--driver", help="NVIDIA driver version, e.g. 535.104.05")
    p.add_argument("--cuda", help="CUDA toolkit version the jax build uses, e.g. 12.4")
    p.add_argument("--cudnn", help="cuDNN version, e.g. 9.1.0")
    p.add_argument("--compute-capability", dest="compute_capability", help="GPU compute capability X.Y")
    p.add_argument("--gpus", help="number of GPUs")
    p.add_argument("--platform", choices=PLATFORMS, help="platform jax will run on")
    p.add_argument("--x64", action="store_true", help="jax_enable_x64 will be on")
    p.add_argument("--python", metavar="X.Y", help="the Python version it will run on, e.g. 3.12")
    p.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="an environment variable it will run with (repeatable); none is set otherwise",
    )


def _version(flag: str, text: str | None) -> str | None:
    if text is None:
        return None
    try:
        if not text.isascii():  # Python's int() reads Arabic-Indic digits, which no real version has
            raise InvalidVersion(text)
        Version(text)
    except (InvalidVersion, ValueError):
        raise PlanError(f"{flag} {text!r} is not a version number") from None
    return text


def pin(text: str) -> tuple[str, str, set[str]]:
    """(normalized name, exact version, extras) of a requirement pinned with ==."""
    from packaging.requirements import InvalidRequirement, Requirement  # lazily: costly, and only plan needs it

    try:
        req = Requirement(text)
    except InvalidRequirement as exc:
        raise PlanError(f"cannot parse requirement {text!r}: {str(exc).splitlines()[0]}") from None
    specs = list(req.specifier)
    if len(specs) != 1 or specs[0].operator not in ("==", "===") or "*" in specs[0].version:
        raise PlanError(f"{text!r} is not pinned: plan evaluates exact versions (write {req.name}==X.Y.Z)")
    try:
        if not specs[0].version.isascii():
            raise InvalidVersion(specs[0].version)
        Version(specs[0].version)
    except (InvalidVersion, ValueError):
        raise PlanError(f"{text!r}: {specs[0].version!r} is not a version number") from None
    return canonicalize_name(req.name), specs[0].version, {e.lower() for e in req.extras}


def facts_from_args(args: argparse.Namespace) -> Facts:
    packages: dict[str, str] = {}
    env = _env(args.env)
    precision = env.get("JAX_DEFAULT_MATMUL_PRECISION")
    jax: JaxFacts = {
        "status": "unknown",
        "x64": bool(args.x64 or env_flag(env.get("JAX_ENABLE_X64"))),
        "default_matmul_precision": precision.lower() if precision else None,
    }
    implied: dict[str, str] = {}
    for text in args.requirements:
        name, version, extras = pin(text)
        if name in packages and packages[name] != version:
            raise PlanError(f"{name} is pinned twice, to {packages[name]} and {version}")
        packages[name] = version
        if name == "jax":
            _jax_extras(version, extras, implied, jax)
    for name, version in implied.items():  # after every explicit pin, so that argument order does not matter
        if packages.setdefault(name, version) != version:
            raise PlanError(f"{name} is pinned to {packages[name]}, but the jax extra implies {version}")
    if args.platform:
        jax["platform"] = args.platform
    if cuda := _version("--cuda", args.cuda):
        jax["cuda_version"] = cuda
    if cudnn := _version("--cudnn", args.cudnn):
        jax["cudnn_version"] = cudnn
    python = PythonFacts(version=_python(args.python)) if args.python else PythonFacts()
    return Facts(
        packages=dict(sorted(packages.items())),
        python=python,
        jax=jax,
        nvidia=_nvidia(args),
        env=env,
        origin="plan",
    )


def _python(text: str) -> str:
    if not re.fullmatch(r"[0-9]{1,2}\.[0-9]{1,3}(\.[0-9]{1,3})?", text):
        raise PlanError(f"--python {text!r} is not a Python version X.Y (e.g. 3.12)")
    return text


def _env(assignments: list[str]) -> dict[str, str]:
    """--env NAME=VALUE, each as the audit would record it: only the variables of the audited scope, with a value
    that may be a secret redacted (select_env, the audit's own selection)."""
    found: dict[str, str] = {}
    for text in assignments:
        name, sep, value = text.partition("=")
        if not sep or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,127}", name):
            raise PlanError(f"--env {text!r} is not of the form NAME=VALUE")
        found[name] = value
    return select_env(found)


def _jax_extras(version: str, extras: set[str], implied: dict[str, str], jax: JaxFacts) -> None:
    """jax[cpu|cudaNN*|tpu]==V pins what `fixes.extras_implied` says it installs; a CUDA extra fixes the platform and
    the CUDA major."""
    implied |= fixes.extras_implied(version, extras)
    for extra in extras:
        if match := re.match(r"^cuda(\d+)", extra):
            jax["platform"] = "cuda"
            jax.setdefault("cuda_version", match[1])
        elif extra == "tpu":
            jax["platform"] = "tpu"
        elif extra.startswith("rocm"):
            jax["platform"] = "rocm"
        elif extra == "cpu":
            jax.setdefault("platform", "cpu")


def _nvidia(args: argparse.Namespace) -> NvidiaFacts:
    driver = _version("--driver", args.driver)
    cc = args.compute_capability
    if cc is not None and not re.fullmatch(r"[0-9]{1,2}\.[0-9]{1,2}", cc):  # ASCII digits only
        raise PlanError(f"--compute-capability {cc!r} is not of the form X.Y (e.g. 8.0)")
    count: int | None = None
    if args.gpus is not None:
        if not re.fullmatch(r"[0-9]{1,4}", args.gpus):
            raise PlanError(f"--gpus {args.gpus!r} is not a number of GPUs")
        count = int(args.gpus)
    if driver is None and cc is None and count is None:
        return {"status": "unknown", "message": "the plan declares no NVIDIA facts"}
    gpus: list[GPU] = [{"index": i, "compute_capability": cc} for i in range(count if count is not None else 1)]
    return {"status": "ok", "driver_version": driver, "gpus": gpus, "gpus_exact": count is not None}
