"""Python, operating system, CPU and memory facts: what a bug report needs and what rules condition on.

Parsers of captured text (`parse_cpu_model`) are pure and tested with real /proc/cpuinfo samples; `get_*` do I/O
and never raise, because a container without /proc or a psutil that fails must still give an audit.
"""

from __future__ import annotations

import os
import platform as _platform
from pathlib import Path

from envaudit.collect import _interpreter, toolkit, tpu
from envaudit.model.facts import PlatformFacts, PythonFacts
from envaudit.model.redact import select_env


def parse_cpu_model(cpuinfo: str) -> str | None:
    """The CPU model from /proc/cpuinfo text (x86 'model name', Arm 'Model'/'CPU part' fallbacks)."""
    fields: dict[str, str] = {}
    for line in cpuinfo.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() not in fields:
            fields[key.strip()] = value.strip()
    for key in ("model name", "Model", "Hardware", "cpu model", "cpu"):
        if fields.get(key):
            return fields[key]
    if "CPU implementer" in fields:
        return f"Arm implementer {fields['CPU implementer']} part {fields.get('CPU part', '?')}"
    return None


def get_env() -> dict[str, str]:
    return select_env(dict(os.environ))


def get_python() -> PythonFacts:
    return _interpreter.python_facts()  # the code an audit from outside (--python) runs in that interpreter


def get_platform() -> PlatformFacts:
    libc_name, libc_version = _platform.libc_ver()
    facts: PlatformFacts = {
        "system": _platform.system(),
        "release": _platform.release(),
        "machine": _platform.machine(),
        "libc": f"{libc_name} {libc_version}".strip() or None,
        "cpu_model": None,
        "cpu_physical_cores": None,
        "cpu_logical_cores": os.cpu_count(),
        "memory_total_bytes": None,
        "ptxas": toolkit.get_ptxas_within(),
    }
    if (chips := tpu.read()) is not None:
        facts["tpu"] = chips
    try:
        facts["cpu_model"] = parse_cpu_model(Path("/proc/cpuinfo").read_text(errors="replace"))
    except OSError:
        facts["cpu_model"] = _platform.processor() or None
    try:
        import psutil

        facts["cpu_physical_cores"] = psutil.cpu_count(logical=False)
        facts["cpu_logical_cores"] = psutil.cpu_count(logical=True)
        facts["memory_total_bytes"] = int(psutil.virtual_memory().total)
    except Exception as exc:  # psutil missing or unsupported platform: the fact is absent, not the audit
        facts["psutil_error"] = f"{type(exc).__name__}: {exc}"
    return facts
