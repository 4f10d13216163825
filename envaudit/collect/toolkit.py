"""The ptxas a CUDA toolkit puts on PATH, and its version, read from the toolkit's files: never run.

XLA compiles every GPU kernel's PTX with ptxas, and in some releases it takes the first ptxas on PATH although
jax points it at the nvidia-cuda-nvcc wheel's (jaxlib 0.4.38; Triton kernels), so an older system CUDA on PATH
assembles PTX newer than it knows ("Unsupported .version 8.3; current version is '8.1'"). Which ptxas is first, and
its version, is therefore a fact. It is read, not run: the audit runs as root on nodes, and running whatever a
PATH entry holds would hand root to anyone who can write there. A CUDA toolkit (11.1 and newer) says its
versions in `version.json` beside `bin/` (`cuda_nvcc` is ptxas's), older ones in `version.txt`.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from envaudit.collect.timed import within
from envaudit.model.facts import Ptxas, ReportError

MAX_BYTES = 1 << 20  # a version file is a few KiB: anything larger is not one
LOOKUP_S = 2.0  # looking through PATH takes milliseconds; a hung network file system takes for ever
_VERSION = re.compile(r"[0-9]{1,4}(\.[0-9]{1,6}){1,3}")


def first_on_path(path: str) -> Path | None:
    """The first executable `ptxas` in PATH's absolute entries (a relative or empty entry means the current
    directory, which a health check has no business reading from)."""
    for entry in path.split(os.pathsep):
        if not entry or not os.path.isabs(entry):
            continue
        candidate = Path(entry, "ptxas")
        try:
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return candidate
        except OSError:  # an entry this user may not search (root's ~/.cargo/bin for a job's user): skipped
            continue
    return None


def _read_small(path: Path) -> str | None:
    """A regular file's text, or None: no symlink and no device even opened, no block on a FIFO, bounded."""
    from envaudit.files.reportfile import read_bounded

    try:
        raw = read_bounded(path, MAX_BYTES + 1, "a version file", follow=False)
    except ReportError:
        return None
    return None if len(raw) > MAX_BYTES else raw.decode("utf-8", errors="replace")


def _from_json(text: str) -> str | None:
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):  # a hostile file nests deeper than the parser goes
        return None
    for key in ("cuda_nvcc", "cuda"):  # ptxas ships in cuda_nvcc; "cuda" is the toolkit's release
        entry = data.get(key) if isinstance(data, dict) else None
        version = entry.get("version") if isinstance(entry, dict) else None
        if isinstance(version, str) and _VERSION.fullmatch(version):
            return version
    return None


def wrapped(ptxas: Path) -> Path:
    """The ptxas a one-line wrapper script execs (`exec /usr/local/cuda-13.0/bin/ptxas "$@"`), else itself."""
    text = _read_small(ptxas) if ptxas.stat().st_size < 4096 else None
    found = re.search(r"^exec\s+(/[^\s\x00]+/ptxas)\s+\"\$@\"\s*$", text or "", re.MULTILINE)
    return Path(found[1]) if text and text.startswith("#!") and found else ptxas


def _from_dist_info(root: Path) -> tuple[str, str] | None:
    """A toolkit assembled from NVIDIA's wheels keeps their metadata (`<root>/dist-info/nvidia_cuda_nvcc-V.dist-info`);
    the wheel itself (`site-packages/nvidia/cuda_nvcc/bin/ptxas`) sits beside `nvidia_cuda_nvcc_cu12-V.dist-info`."""
    for where in (root / "dist-info", root.parent.parent):
        for info in sorted(where.glob("nvidia_cuda_nvcc*-*.dist-info")):
            version = info.name.removesuffix(".dist-info").rsplit("-", 1)[-1]
            if _VERSION.fullmatch(version):
                return version, str(info)
    return None


def toolkit_version(ptxas: Path) -> tuple[str | None, str]:
    """(version, where it was read) for the toolkit that `ptxas` belongs to (`<root>/bin/ptxas`)."""
    try:
        root = wrapped(ptxas).resolve(strict=True).parent.parent
    except (OSError, RuntimeError):
        return None, "its path does not resolve"
    if wheel := _from_dist_info(root):
        return wheel
    text = _read_small(root / "version.json")
    if text is not None:
        version = _from_json(text)
        return (version, str(root / "version.json")) if version else (None, "version.json names no cuda_nvcc")
    text = _read_small(root / "version.txt")  # CUDA <= 11.0: "CUDA Version 10.2.89"
    found = re.search(r"CUDA Version ([0-9.]+)", text or "")
    if found and _VERSION.fullmatch(found[1]):
        return found[1], str(root / "version.txt")
    return None, "no version.json or version.txt beside its bin/ (not a CUDA toolkit's layout)"


def get_ptxas(path: str | None = None) -> Ptxas:
    """The first ptxas on PATH (this process's, which the audited one inherits) and its toolkit's version."""
    try:
        found = first_on_path(os.environ.get("PATH", "") if path is None else path)
    except Exception as exc:  # a collector never raises
        return {"path": None, "version": None, "source": f"PATH could not be read: {type(exc).__name__}: {exc}"}
    if found is None:
        return {"path": None, "version": None, "source": "no ptxas on PATH"}
    try:
        version, source = toolkit_version(found)
    except Exception as exc:  # a collector never raises: the version is unknown, and why
        version, source = None, f"cannot read its toolkit: {type(exc).__name__}: {exc}"
    return {"path": str(found), "version": version, "source": source}


def get_ptxas_within(seconds: float = LOOKUP_S) -> Ptxas:
    """get_ptxas, or unknown if PATH's directories have not answered within `seconds` (an NFS mount that hangs;
    collect.within, as NVML's)."""
    answer = within(seconds, get_ptxas, "envaudit-ptxas")
    if answer is not None:
        return answer
    return {"path": None, "version": None, "source": f"PATH's directories did not answer within {seconds:g} s"}
