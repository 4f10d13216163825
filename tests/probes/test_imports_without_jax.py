"""An environment without jax where a library imports it anyway (jaxns 2.6.4 declares no requirement at all, and
`import jaxns` raises `No module named 'jax'`): the audit's one truth is that library's failed import, with
installing jax as its fix, not "nothing to audit". A library whose top level reaches no jax (transformers' Flax
models are loaded lazily) and one that guards its import are no finding; an environment where nothing imports jax
keeps its "nothing to audit". The environment is a real virtualenv of this interpreter's base Python, with neither
jax nor NumPy, its libraries on PYTHONPATH as pip leaves them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import envaudit_run
from tests.probes.test_imports import install

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]

LIBRARIES: dict[str, dict[str, Any]] = {
    "nsdeclared": {  # jaxns 2.6.4: no Requires-Dist; its package imports jax in a module its top level loads
        "requires": [],
        "files": {"nsdeclared/__init__.py": "from nsdeclared import core\n", "nsdeclared/core.py": "import jax\n"},
    },
    "lazymodels": {  # its jax module is loaded lazily: `import lazymodels` works without jax
        "requires": ["numpy"],
        "files": {"lazymodels/__init__.py": "", "lazymodels/flax_models.py": "import jax.numpy as jnp\n"},
    },
    "guarded": {  # a guarded import, indented: no candidate
        "requires": [],
        "files": {"guarded/__init__.py": "try:\n    import jax\nexcept ImportError:\n    jax = None\n"},
    },
}


def _venv(where: Path) -> Path:
    """A virtualenv of the base Python, without pip: no jax, no NumPy."""
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", str(where)], check=True, timeout=120)
    return where / "bin" / "python"


def _audit(python: Path, site: Path) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")} | {"PYTHONPATH": str(site)}
    done = envaudit_run(
        sys.executable, "--python", str(python), "--probe", "imports", "--format", "json", env=env, timeout=300
    )
    assert done.returncode in (0, 1), done.stderr[-2000:]
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def test_a_library_that_imports_jax_where_none_is_installed_fails_with_installing_jax_as_its_fix(
    tmp_path: Path,
) -> None:
    python = _venv(tmp_path / "env")
    site = tmp_path / "site"
    install(site, LIBRARIES)
    report = _audit(python, site)
    found = {f["id"]: f for f in report["findings"]}
    assert report["verdict"] == "fail", found
    failed = found["import-fails-nsdeclared"]
    assert failed["severity"] == "fail" and "No module named 'jax'" in failed["detail"]
    assert "declares it nowhere" in failed["detail"] and "nsdeclared/core.py" in failed["detail"]
    assert failed["fix"].split()[-1] == "jax", failed["fix"]  # installing jax, the release left to the plan
    assert "jax" in report["plan"]["fix"]
    # a lazy module and a guarded import are no failure; the library's failure replaces "nothing to audit"
    assert not {i for i in found if i.startswith("import-fails-")} - {"import-fails-nsdeclared"}
    assert "nothing-to-audit" not in found
    imported = {o["distribution"] for o in report["facts"]["jax"]["imports"]}
    assert imported == {"nsdeclared", "lazymodels"}, imported  # the guarded one is not even a candidate


def test_where_nothing_imports_jax_there_is_still_nothing_to_audit(tmp_path: Path) -> None:
    python = _venv(tmp_path / "env")
    site = tmp_path / "site"
    install(site, {"guarded": LIBRARIES["guarded"]})
    report = _audit(python, site)
    found = {f["id"] for f in report["findings"]}
    assert "nothing-to-audit" in found and not any(i.startswith("import-fails-") for i in found)
    assert report["verdict"] == "warn"
