"""What an interpreter says about itself and its installed distributions: run by path, standard library only.

`envaudit audit --python PATH` audits an environment envaudit is not installed in (a conda environment, a
project's virtualenv, a container image's interpreter): that interpreter runs this file and prints one JSON
object, its Python facts and every distribution on its `sys.path` (name, version, location, requirements), and
envaudit judges them here. It imports nothing outside the standard library, so any Python 3.8+ can run it, and it
imports nothing of the audited stack. `envaudit.collect.system.get_python` is this module's `python_facts`, so a
live audit and an audit from outside describe an interpreter with the same code.
"""

from __future__ import annotations

import importlib.util
import json
import os
import platform
import re
import shutil
import site
import sys
from importlib import metadata
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # for mypy alone: the interpreter that runs this file has no envaudit
    from envaudit.model.facts import Environment, PythonFacts

MINIMUM_JAXLIB = re.compile(r"^_minimum_jaxlib_version\s*=\s*['\"]([^'\"]+)['\"]", re.MULTILINE)


def environment(prefix: str, base_prefix: str) -> Environment:
    """What made the environment at `prefix`, from its own files: pyvenv.cfg names uv (`uv = 0.5.1`) or virtualenv
    (`virtualenv = 20.26.3`), else the standard library's venv wrote it; conda-meta/ marks a conda environment,
    pixi's under `.pixi/envs/` (pixi puts its environments there); none of these: the system's interpreter."""
    config = os.path.join(prefix, "pyvenv.cfg")
    if prefix != base_prefix and os.path.isfile(config):
        try:
            with open(config, encoding="utf-8", errors="replace") as handle:
                keys = {line.partition("=")[0].strip().lower() for line in handle.read(65536).splitlines()}
        except OSError:
            keys = set()
        return "uv" if "uv" in keys else "virtualenv" if "virtualenv" in keys else "venv"
    if os.path.isdir(os.path.join(prefix, "conda-meta")):
        return "pixi" if f"{os.sep}.pixi{os.sep}envs{os.sep}" in prefix + os.sep else "conda"
    return "system"


def uv_found(prefix: str) -> bool:
    """Whether a uv command runs here: the environment's own (its bin or Scripts folder) or one on PATH."""
    own = os.path.join(prefix, "Scripts" if os.name == "nt" else "bin")
    return shutil.which("uv", path=own) is not None or shutil.which("uv") is not None


def python_facts() -> PythonFacts:
    prefix = sys.prefix
    return {
        "version": platform.python_version(),
        "implementation": platform.python_implementation(),
        "executable": sys.executable,
        "prefix": prefix,
        "virtualenv": prefix != sys.base_prefix,
        "conda": os.path.isdir(os.path.join(prefix, "conda-meta")) or "CONDA_PREFIX" in os.environ,
        "environment": environment(prefix, sys.base_prefix),
        "pip": importlib.util.find_spec("pip") is not None,
        "uv": uv_found(prefix),
        # how this interpreter's path was changed (not a drift), its entries absolute as sys.path holds them
        "pythonpath": os.pathsep.join(
            os.path.abspath(e) for e in os.environ.get("PYTHONPATH", "").split(os.pathsep) if e
        ),
        "user_site": site.getusersitepackages() if site.ENABLE_USER_SITE else "",  # on sys.path before site-packages
        "home": os.path.expanduser("~"),
        "leftovers": leftovers(),
    }


def markers() -> dict[str, str]:
    """This interpreter's environment markers (PEP 508), so requirements are judged for it, not for envaudit's."""
    version = ".".join(platform.python_version_tuple()[:2])
    info = sys.implementation
    implementation = f"{info.version.major}.{info.version.minor}.{info.version.micro}"
    return {
        "implementation_name": info.name,
        "implementation_version": implementation,
        "os_name": os.name,
        "platform_machine": platform.machine(),
        "platform_release": platform.release(),
        "platform_system": platform.system(),
        "platform_version": platform.version(),
        "python_full_version": platform.python_version(),
        "platform_python_implementation": platform.python_implementation(),
        "python_version": version,
        "sys_platform": sys.platform,
    }


def minimum_jaxlib(version_py: str) -> list[str]:
    """Old jax releases declare no jaxlib requirement; their jax/version.py says the minimum (pure)."""
    found = MINIMUM_JAXLIB.search(version_py)
    return [f"jaxlib>={found.group(1)}"] if found else []


def requires(dist: metadata.Distribution) -> list[str]:
    """Its declared requirements; for an old jax that declares no jaxlib, the minimum its version.py names."""
    declared = list(dist.requires or ())
    if (dist.metadata["Name"] or "").lower() != "jax" or any(r.startswith("jaxlib") for r in declared):
        return declared
    try:
        with open(str(dist.locate_file("jax/version.py")), encoding="utf-8", errors="replace") as handle:
            return declared + minimum_jaxlib(handle.read())
    except OSError:
        return declared


def installer(dist: metadata.Distribution) -> str:
    """Who installed it, as its INSTALLER file says (pip, uv, conda; PEP 376), "" where it has none."""
    try:
        lines = (dist.read_text("INSTALLER") or "").strip().splitlines()
    except (OSError, UnicodeDecodeError):
        return ""
    return lines[0].strip()[:64] if lines else ""


def requested(dist: metadata.Distribution) -> bool:
    """Whether it was installed by name, not pulled in by another: pip and uv write a REQUESTED file then (PEP 376,
    packaging's recording-installed-packages)."""
    try:
        return dist.read_text("REQUESTED") is not None
    except (OSError, UnicodeDecodeError):
        return False


def stashed(dist: metadata.Distribution) -> bool:
    """pip's stash of a distribution it is removing or replacing (`~axlib-0.10.2.dist-info`: the name's first letter
    made `~`): what an interrupted install leaves behind, and no distribution Python imports."""
    return os.path.basename(str(getattr(dist, "_path", "") or "")).startswith("~")


def recorded(dist: metadata.Distribution) -> bool:
    """Whether it has the RECORD file an installer needs to uninstall it (an interrupted install, or files copied
    by hand, leave a dist-info without one: pip and uv then refuse to replace it)."""
    path = getattr(dist, "_path", None)
    return path is None or os.path.isfile(os.path.join(str(path), "RECORD"))


MAX_LEFTOVERS = 1000  # pip stashes two entries per distribution it replaces


def leftovers() -> list[str]:
    """What an interrupted pip left in this interpreter's site directories: its stashes (`~axlib`,
    `~axlib-0.10.2.dist-info`, the first letter made `~`), which Python never imports and pip warns of at every
    run. Only site-packages and dist-packages are read (a working directory's `~$notes.docx` is no stash)."""
    found: list[str] = []
    for entry in dict.fromkeys(os.path.abspath(e) for e in sys.path if e):
        if os.path.basename(entry) not in ("site-packages", "dist-packages"):
            continue
        try:
            names = sorted(os.listdir(entry)) if os.path.isdir(entry) else []
        except OSError:
            continue
        found += [os.path.join(entry, n) for n in names if n.startswith("~")]
    return found[:MAX_LEFTOVERS]


def distributions() -> list[dict[str, object]]:
    found: list[dict[str, object]] = []
    for dist in metadata.distributions():
        name = dist.metadata["Name"]
        if name and not stashed(dist):
            found.append(
                {
                    "name": name,
                    "version": dist.version,
                    "location": str(getattr(dist, "_path", "") or ""),
                    "requires": requires(dist),
                    "installer": installer(dist),
                    "recorded": recorded(dist),
                    "requested": requested(dist),
                }
            )
    return found


if __name__ == "__main__":
    sys.stdout.write(
        json.dumps({"python": python_facts(), "markers": markers(), "distributions": distributions()}) + "\n"
    )
