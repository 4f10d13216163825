"""The probes' shared kit: the helpers every known-answer probe uses, in one place.

A probe imports only the standard library, numpy, the library it tests and this kit -- never envaudit -- so it can
be run alone (``python probes/dense_chain.py [--precision float32|float64|auto]``, this directory on sys.path), and
``envaudit probes NAME --script`` prints it as one standalone file with this kit inlined, to attach to an upstream
bug report. Every probe module has:

- ``NAME``: the probe's name;
- ``run(precision="auto", seed=0) -> dict``: ``{"name", "status": "pass"|"fail"|"skip", "metrics", "thresholds",
  "message"}`` and, when it compared several devices, ``"devices"``. ``precision`` "auto" means what the user's
  jax configuration gives (float64 iff ``jax_enable_x64`` is on); float64 work turns x64 on only for that
  computation and restores the setting.
- as a script: exactly one JSON object on stdout; exit 0 pass, 1 wrong answer, 77 skip, 3 the probe itself
  crashed (traceback on stderr, nothing on stdout).

Every numeric threshold is an upper bound on the metric of the same name (a NaN metric fails); a string threshold
is the value the metric must equal. Errors are norm-wise (max|d|/max|ref| or Frobenius), never element-wise:
healthy float32 element-wise errors reach 4e-4 on entries near zero.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import math
import os
import sys
import threading
import traceback
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import AbstractContextManager
from typing import Any

try:
    import numpy as np
except ModuleNotFoundError:  # where neither jax nor NumPy is installed only the imports probe runs, on no NumPy
    np = None  # type: ignore[assignment]
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from numpy.typing import NDArray

# Norm-wise bounds of every error and difference at HIGHEST (measured on a 2-core CPU, jax 0.5.3 and 0.10.2:
# float32 results are 1e-7 to 1e-6 from the float64 answer, float64 ones 1e-16 to 2e-15).
TOLERANCE = {"float32": 1e-5, "float64": 1e-12}
EXIT_CODES = {"pass": 0, "fail": 1, "skip": 77}
# Bounds of what an accelerator computes by documented approximation (transcendental functions, the residuals of
# matmul-based decompositions: metrics named rel_fn_err_* and rel_residual_*), as envaudit/model/metrics.toml's
# [platform_error] (measured on a TPU v5e: log 4.5e-5 from float64; eigh and svd residuals 9.7e-6).
APPROXIMATE = {"float32": 3e-4, "float64": 1e-12}


def x64(on: bool) -> AbstractContextManager[Any]:
    """A context manager turning jax_enable_x64 on or off, restoring it on exit (jax 0.4.2x to 0.11)."""
    import jax

    state = getattr(jax, "enable_x64", None)  # jax >= 0.7: a config State, callable as a context manager
    if state is not None:
        return state(on)  # type: ignore[no-any-return]
    experimental: Any = importlib.import_module("jax.experimental")  # jax < 0.7

    return experimental.enable_x64() if on else experimental.disable_x64()  # type: ignore[no-any-return]


def bound_s(default: float) -> float:
    """The running probe's bound in seconds, as envaudit's child says it (ENVAUDIT_PROBE_BOUND_S); `default` for a
    probe run alone."""
    try:
        return float(os.environ.get("ENVAUDIT_PROBE_BOUND_S", ""))
    except ValueError:
        return default


def resolve(precision: str) -> str:
    import jax

    if precision == "auto":
        return "float64" if jax.dtypes.canonicalize_dtype(np.float64) == np.float64 else "float32"
    if precision not in TOLERANCE:
        raise ValueError(f"precision must be float32, float64 or auto, not {precision!r}")
    return precision


def native(precision: str) -> str:
    """The dtype a probe computes in where it need not check float64 itself: what `resolve` gives, except that
    "auto" under x64 stays float32 where a device is a TPU. XLA:TPU implements no float64 FFT or LU decomposition
    and emulates float64 arithmetic, compiling each program for seconds (measured on a TPU v5e with jax 0.10.2 and
    JAX_ENABLE_X64=1: "Unexpected operand type for FFT: c128", "Only F32 and C64 types are implemented in
    LuDecomposition", eager float64 operations past 120 s, the float64 probes 46 s in all against 2 s): there the
    emulation is checked once, by dense_chain (which resolves), and the other probes check float32, what a program
    there computes FFTs and decompositions in. An explicit float64 is run as asked."""
    dtype = resolve(precision)
    if precision == "auto" and dtype == "float64" and any(d.platform == "tpu" for d in devices()):
        return "float32"
    return dtype


def rel(a: NDArray[Any], ref: NDArray[Any]) -> float:
    return float(np.max(np.abs(np.asarray(a, np.float64) - ref)) / np.max(np.abs(ref)))


def frob(a: NDArray[Any], ref: NDArray[Any]) -> float:
    return float(np.linalg.norm(np.asarray(a, np.float64) - ref) / np.linalg.norm(ref))


def judge(metrics: dict[str, object], thresholds: dict[str, object]) -> list[str]:
    bad = []
    for key, bound in thresholds.items():
        value = metrics[key]
        if isinstance(bound, str):
            if value != bound:
                bad.append(f"{key}={value} (expected {bound})")
        elif not (isinstance(value, (int, float)) and isinstance(bound, (int, float)) and value <= bound):
            bad.append(f"{key}={value:.3g} > {bound:.3g}" if isinstance(value, float) else f"{key}={value}")
    return bad


def finite(metrics: dict[str, object]) -> dict[str, object]:
    """NaN and infinities as strings, so the JSON printed is strict JSON."""
    return {k: repr(v) if isinstance(v, float) and not math.isfinite(v) else v for k, v in metrics.items()}


def bits(err: float, dtype: str) -> float:
    """-log2 of a relative error: about the mantissa bits that survive; an exact result counts as all of them."""
    cap = float(np.finfo(dtype).nmant + 1)
    return round(min(-math.log2(err), cap), 2) if err > 0 else cap


def highest(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` traced at HIGHEST matmul precision whatever the user's default (the checks judge the arithmetic).
    "float32" is HIGHEST's name that every jax since 0.4 accepts here ("highest" only from 0.4.31)."""
    import jax

    def at_highest(*args: Any, **kwargs: Any) -> Any:
        with jax.default_matmul_precision("float32"):
            return fn(*args, **kwargs)

    return at_highest


class Prepared(Exception):
    """Raised in a preparing thread (`prepare`) where the probe reaches its compile: nothing of it runs there."""


_PREPARING = threading.local()  # .on: this thread prepares a probe's programs, and runs none
_PREPARED: dict[str, Future[Any]] = {}  # the lowered program's text (sha256) -> its compilation, started ahead
_PREPARED_LOCK = threading.Lock()
_PREPARE_POOL: list[ThreadPoolExecutor] = []


def prepare(run: Callable[..., Any], precision: str) -> None:
    """Start compiling what `run(precision)` will compile, and return: the probe is run up to its `compile_all`,
    whose programs are lowered and handed to a pool of compiling threads, and stopped there (`Prepared`). When the
    probe later runs for real, its `compile_all` lowers the same programs, finds them by their text and waits for
    those compilations instead of starting its own (envaudit's child prepares the probes after the running one,
    on a host where compiling is slow and cores are idle: a TPU's, 4-5 s a program). Never raises."""
    _PREPARING.on = True
    try:
        run(precision)
    except BaseException:  # Prepared, or whatever the probe raises before it compiles: its own run will say it
        pass
    finally:
        _PREPARING.on = False


def _text_key(lowered: Any) -> str:
    return hashlib.sha256(lowered.as_text().encode()).hexdigest()


def compile_all(calls: dict[Any, tuple[Callable[..., Any], tuple[Any, ...]]]) -> dict[Any, Any]:
    """key -> its function compiled ahead of time for its arguments (only their shapes and dtypes matter), the
    compilations in parallel threads: XLA compiles without holding the GIL, and on the CPU compiling is most of a
    cold probe's time (two conv chains: 0.18 s one after the other, 0.12 s at once). Each is the very executable
    ``jax.jit(fn)(*args)`` would compile and run; one `prepare` started is waited for, not compiled again."""
    import jax

    if getattr(_PREPARING, "on", False):
        programs = [jax.jit(fn).lower(*args) for fn, args in calls.values()]
        with _PREPARED_LOCK:
            if not _PREPARE_POOL:
                _PREPARE_POOL.append(ThreadPoolExecutor(max_workers=max(os.cpu_count() or 2, 2)))
            for low in programs:
                _PREPARED.setdefault(_text_key(low), _PREPARE_POOL[0].submit(low.compile))
        raise Prepared
    progress("compiling")
    lowered = {key: jax.jit(fn).lower(*args) for key, (fn, args) in calls.items()}  # traced here: config is per thread
    with _PREPARED_LOCK:
        started = {key: _PREPARED.pop(_text_key(low), None) for key, low in lowered.items()} if _PREPARED else {}
    with ThreadPoolExecutor(max_workers=len(lowered)) as pool:
        futures = {key: started.get(key) or pool.submit(low.compile) for key, low in lowered.items()}
        compiled = {key: future.result() for key, future in futures.items()}
    progress("compiled")
    return compiled


def progress(
    stage: str, *, facts: dict[str, list[dict[str, Any]]] | None = None, doing: dict[str, Any] | None = None
) -> None:
    """Tell envaudit's child what this probe is doing ("compiling", "compiled"): a probe cut by its bound while it
    compiles, using CPU, is slow (a cold compilation cache), not hung. `facts`: outcomes found so far (the imports
    probe's, one by one: {"imports": [outcome]}), and `doing`: the one in flight ({"imports": {...}}), so that a
    process that dies keeps what it found and names what killed it. Run alone, a probe has nobody to tell."""
    tell = getattr(sys.modules.get("__main__"), "envaudit_progress", None)
    if callable(tell):
        tell(stage, facts=facts, doing=doing)


def devices() -> list[Any]:
    """The local devices to compare: all of them, or those ENVAUDIT_DEVICES names by jax id ("0,2")."""
    import jax

    chosen = {int(d) for d in os.environ.get("ENVAUDIT_DEVICES", "").split(",") if d.strip().isdigit()}
    return [d for d in jax.local_devices() if not chosen or d.id in chosen]


def runner(fn: Callable[..., Any], compiled: Any, device: Any) -> Callable[..., Any]:
    """The program to run on `device`: `compiled` (by compile_all from arguments placed on ``devices()[0]``: an
    ahead-of-time executable is bound to the device it was compiled for) there, ``jax.jit(fn)`` on the others."""
    import jax

    return compiled if device == devices()[0] else jax.jit(fn)


def platform_tolerance(dtype: str) -> float:
    """A probe run alone: the bound of its rel_fn_err_* and rel_residual_* metrics, the dtype's on CPUs and an
    accelerator's where any device compared is one."""
    accelerated = any(d.platform != "cpu" for d in devices())
    return APPROXIMATE[dtype] if accelerated else TOLERANCE[dtype]


def each_device(fn: Callable[..., Any], args: tuple[Any, ...], ref: NDArray[Any]) -> list[dict[str, object]]:
    """``fn`` on every device at once, at HIGHEST and at the default precision in one program: its inputs and
    outputs replicated, so each device computes the whole of it on its own copy, in parallel (the default run is
    the one that takes a GPU's tensor cores). Per device: the errors of both runs against the float64 answer and
    digests of their bits (devices of one kind running one executable on one input must agree bit for bit). With
    one device and no ENVAUDIT_DEVICES, there is nothing to compare: []."""
    import jax
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    chosen = devices()
    if len(chosen) < 2 and not os.environ.get("ENVAUDIT_DEVICES"):
        return []
    everywhere = NamedSharding(Mesh(np.array(chosen), ("devices",)), PartitionSpec())  # type: ignore[no-untyped-call]
    both = jax.jit(lambda *a: (highest(fn)(*a), fn(*a)), out_shardings=everywhere)
    exact, default = both(*jax.device_put(args, everywhere))
    found: list[dict[str, object]] = []
    for one, other in zip(
        *(sorted(o.addressable_shards, key=lambda s: int(s.device.id)) for o in (exact, default)), strict=True
    ):
        answer: dict[str, object] = {"id": int(one.device.id), "kind": str(one.device.device_kind)}
        for suffix, shard in (("", one), ("_default", other)):
            value = np.asarray(shard.data)
            error = rel(value, ref)
            answer["digest" + suffix] = hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest()[:16]
            answer["rel_err" + suffix] = error if math.isfinite(error) else repr(error)
        found.append(answer)
    return found


def device_problems(found: list[dict[str, object]], tol: float) -> list[str]:
    """A probe's own verdict on its devices: each within `tol` of the answer at HIGHEST (the default run is
    reported, as ever), and the other devices of one kind agreeing bit for bit, in both runs; where no answer has
    a strict majority, none is blamed: the devices disagree."""
    wrong = [d for d in found if not float(str(d["rel_err"])) <= tol]
    bad = [f"device {d['id']}: rel_err={d['rel_err']}" for d in wrong]
    for kind in sorted({str(d["kind"]) for d in found}):
        same = [d for d in found if d["kind"] == kind and d not in wrong]  # the wrong ones do not vote
        if not same:
            continue
        bits = [(d["digest"], d.get("digest_default")) for d in same]
        usual = max(bits, key=bits.count)
        if len(set(bits)) == 1:
            continue
        if bits.count(usual) * 2 <= len(bits):
            bad.append(f"the {kind} devices {', '.join(str(d['id']) for d in same)} disagree, none with a majority")
        else:
            bad += [
                f"device {d['id']} ({kind}) differs from the others"
                for d, b in zip(same, bits, strict=True)
                if b != usual
            ]
    return bad


def finish(
    name: str,
    metrics: dict[str, object],
    thresholds: dict[str, object],
    good: str,
    found: list[dict[str, object]] | None = None,
    tol: float = 0.0,
) -> dict[str, object]:
    """The probe's result: its own verdict on its thresholds (and its devices, with their bound `tol`)."""
    bad = judge(metrics, thresholds) + device_problems(found or [], tol)
    message = "; ".join(bad) if bad else good + (f"; {len(found)} devices agree" if found else "")
    return result(name, "fail" if bad else "pass", metrics, thresholds, message) | ({"devices": found} if found else {})


def result(
    name: str, status: str, metrics: dict[str, object], thresholds: dict[str, object], message: str
) -> dict[str, object]:
    """The one JSON object a probe prints (non-finite metrics as strings, so the JSON stays strict)."""
    return {"name": name, "status": status, "metrics": finite(metrics), "thresholds": thresholds, "message": message}


def batch_metrics(
    ref: NDArray[Any],
    batched: NDArray[Any],
    per_example: NDArray[Any],
    rerun: NDArray[Any],
    default: NDArray[Any],
    rerun_default: NDArray[Any],
    dtype: str,
) -> dict[str, object]:
    """What every batch-consistency probe measures: the batched and per-example results (HIGHEST) against the
    float64 answer and each other, a rerun of the same executable, and the default-precision run."""
    found: dict[str, object] = {
        "rel_err_batched": rel(batched, ref),
        "rel_err_per_example": rel(per_example, ref),
        "rel_diff_batched_vs_per_example": rel(batched, per_example.astype(np.float64)),
        "rerun_rel_diff": rel(rerun, batched.astype(np.float64)),
        "bitwise_equal_batched_per_example": bool(np.array_equal(batched, per_example)),
        "output_dtype": str(batched.dtype),
        "rel_err_batched_default": rel(default, ref),
        "rerun_rel_diff_default": rel(rerun_default, default.astype(np.float64)),
    }
    return found | {"effective_bits_default": bits(rel(default, ref), dtype)}


def chain_thresholds(metrics: dict[str, object], dtype: str) -> dict[str, object]:
    """Every norm-wise error at HIGHEST shares the dtype's bound, reruns of one executable must give the same
    bits, and the output keeps the dtype asked for; the default-precision run is reported, not bounded here."""
    tol = TOLERANCE[dtype]
    thresholds: dict[str, object] = {
        key: tol for key in metrics if key.startswith(("rel_err", "rel_diff")) and not key.endswith("_default")
    }
    thresholds.update({key: 0.0 for key in metrics if key.startswith("rerun_")})
    thresholds["output_dtype"] = dtype
    return thresholds


def main(name: str, doc: str | None, run: Callable[..., dict[str, object]], argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=doc.splitlines()[0] if doc else name)
    parser.add_argument("--precision", choices=("auto", "float32", "float64"), default="auto")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    try:
        result = run(args.precision, seed=args.seed)
    except Exception:  # the probe could not run at all: no JSON, a traceback, a distinct exit code
        traceback.print_exc()
        return 3
    print(json.dumps(result, allow_nan=False))
    return EXIT_CODES[str(result["status"])]
