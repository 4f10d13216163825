"""The jax facts stages, run in the child process before any probe: what jax loaded, then one computation.

Loaded by `_main.py` by path and imported by the parent only for its pure decoders (nvml.py uses `decode_cuda`):
it imports only the standard library and, in the child, jax, so a segfault or a hang in the audited stack kills
the child and not the audit. Each stage is reported (and flushed) before the next begins, so the parent can tell
an import error, a crash on first use (jax 0.4.25 with NumPy 2 imports cleanly and segfaults on the first array
operation) and a hang in device initialisation apart; `jaxfacts.parse` turns the stages into `facts.jax`.
"""

from __future__ import annotations

import importlib
import sys
import traceback
from collections.abc import Callable
from typing import Any


def decode_cudnn(value: int) -> str:
    """cuDNN 9 encodes MAJOR*10000+MINOR*100+PATCH, cuDNN 8 and older MAJOR*1000+MINOR*100+PATCH."""
    major_factor = 10000 if value >= 90000 else 1000
    major, rest = divmod(value, major_factor)
    return f"{major}.{rest // 100}.{rest % 100}"


def decode_cuda(value: int) -> str:
    """CUDA encodes MAJOR*1000+MINOR*10 (12080 is 12.8)."""
    return f"{value // 1000}.{(value % 1000) // 10}"


def cuda_libraries() -> dict[str, Any]:
    try:
        from jax._src.lib import cuda_versions
    except Exception:
        return {}
    if cuda_versions is None:
        return {}
    found: dict[str, Any] = {}
    for attr in sorted(dir(cuda_versions)):
        if attr.endswith("_get_version") and not attr.startswith("_"):
            try:
                found[attr[: -len("_get_version")]] = int(getattr(cuda_versions, attr)())
            except Exception as exc:
                found[attr[: -len("_get_version")]] = f"error: {exc}"
    return found


def _text_or_none(value: object) -> str | None:
    return None if value is None else str(value)


def platform_of(backend: str, platform_version: str) -> str:
    text = f"{backend} {platform_version}".lower()
    for name in ("rocm", "cuda", "tpu"):
        if name in text:
            return name
    return "cuda" if backend == "gpu" else backend


def stages(emit: Callable[..., None]) -> int:
    """The stages, each reported through `emit(stage, **data)`; returns 0 when every stage was reached."""
    emit("start", python=sys.version.split()[0])
    try:
        import jax
    except ModuleNotFoundError as exc:
        emit("import", error=f"{type(exc).__name__}: {exc}", absent=exc.name == "jax")
        return 3
    except BaseException as exc:
        emit("import", error=f"{type(exc).__name__}: {exc}", trace=traceback.format_exc(limit=3))
        return 3
    try:
        jaxlib_version = getattr(importlib.import_module("jaxlib"), "__version__", None)
    except Exception:
        jaxlib_version = None
    emit("imported", jax_version=jax.__version__, jaxlib_version=jaxlib_version)

    try:
        backend = jax.default_backend()
        devices = jax.devices()
        # The backend's client, as a device holds it: importing jax.extend for it costs 17 ms (jax 0.10).
        client = getattr(devices[0], "client", None) if devices else None
        if client is None:
            try:
                client = importlib.import_module("jax.extend.backend").get_backend()
            except ImportError:  # jax < 0.4.26
                client = importlib.import_module("jax.lib.xla_bridge").get_backend()
        platform_version = str(client.platform_version)
    except BaseException as exc:
        emit("devices", error=f"{type(exc).__name__}: {exc}")
        return 4
    libs = cuda_libraries()
    emit(
        "devices",
        backend=backend,
        platform=platform_of(backend, platform_version),
        platform_version=platform_version.strip(),
        devices=[
            {
                "id": int(d.id),
                "platform": str(d.platform),
                "device_kind": str(d.device_kind),
                "compute_capability": _text_or_none(getattr(d, "compute_capability", None)),
                # the CUDA ordinal inside this process (after CUDA_VISIBLE_DEVICES): how it maps to NVML
                "local_hardware_id": getattr(d, "local_hardware_id", None),
            }
            for d in devices
        ],
        x64=bool(getattr(jax.config, "jax_enable_x64", False)),
        default_matmul_precision=_text_or_none(getattr(jax.config, "jax_default_matmul_precision", None)),
        cuda_libraries=libs,
        cuda_version=decode_cuda(libs["cuda_runtime"]) if isinstance(libs.get("cuda_runtime"), int) else None,
        cudnn_version=decode_cudnn(libs["cudnn"]) if isinstance(libs.get("cudnn"), int) else None,
    )

    try:
        import numpy as np  # jax requires it

        # One host-to-device transfer, one compiled program, one read back: eager jnp operations would compile a
        # program each (4 here; on a cold compilation cache each is a compilation).
        x = np.arange(16.0, dtype=np.float32).reshape(4, 4)
        value = float(jax.jit(lambda a: (a @ a).sum())(x).block_until_ready())
    except BaseException as exc:
        emit("first_use", error=f"{type(exc).__name__}: {exc}")
        return 5
    emit("first_use", ok=value == 3920.0, value=value)  # sum of X @ X for X = arange(16).reshape(4, 4)
    emit("environment_info", environment_info=environment_info(jax))
    return 0


NVIDIA_SMI_S = 10.0  # jax runs nvidia-smi without a bound; a wedged driver must not hold the child's facts
MAX_INFO = 64 * 1024  # nvidia-smi's table on 8 GPUs with their processes is a few kilobytes


def environment_info(jax: Any) -> str:
    """`jax.print_environment_info()` as jax prints it, the block maintainers ask for in a bug report; its
    nvidia-smi is run under a bound (jax's own runs it unbounded). "" where this jax has none or it fails."""
    try:
        info: Any = importlib.import_module("jax._src.environment_info")
        if hasattr(info, "try_nvidia_smi"):
            info.try_nvidia_smi = _nvidia_smi
        text = jax.print_environment_info(return_string=True)
    except Exception:
        return ""
    return str(text or "")[:MAX_INFO]


def _nvidia_smi() -> str | None:
    """jax's try_nvidia_smi, bounded: its output, or None where there is none. In a session of its own, so that
    what it started is killed with it and no process left behind holds its output open."""
    import contextlib
    import os
    import signal
    import subprocess

    try:
        proc = subprocess.Popen(
            ["nvidia-smi"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True
        )
    except OSError:
        return None
    try:
        out, _ = proc.communicate(timeout=NVIDIA_SMI_S)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):  # its whole session: what it started holds the output
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return None
    return out.decode(errors="replace") if proc.returncode == 0 else None


def device_memory() -> list[dict[str, int]]:
    """What each local device's allocator reports (``Device.memory_stats()``), read after the probes ran, so the
    peak is what they used; the CPU client keeps no such statistics (None), so on a CPU the list is empty."""
    jax = sys.modules.get("jax")
    if jax is None:
        return []
    found = []
    try:
        for device in jax.local_devices():
            stats = device.memory_stats() if hasattr(device, "memory_stats") else None
            if stats:
                keys = ("peak_bytes_in_use", "bytes_in_use", "bytes_limit")
                found.append({"id": int(device.id), **{k: int(stats[k]) for k in keys if k in stats}})
    except Exception:  # statistics are a courtesy: a backend that cannot give them gives none
        return []
    return found
