"""The imports probe on the real jax, with libraries installed for the test: a directory on PYTHONPATH that holds
distributions as pip leaves them (a `.dist-info` with METADATA, RECORD and top_level.txt, and their packages).

Each library is a kind the probe must tell apart: one whose import raises the way dm-haiku 0.0.12 does under jax
0.10.1 (a name jax removed, used at module level), one whose top level needs a framework that is not installed and
whose JAX code lives in a `jax` package (tensorflow-probability without TensorFlow), one that imports, one whose
requirement names jax only through an extra, and a namespace package (orbax).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import envaudit_run

pytestmark = pytest.mark.jax
ROOT = Path(__file__).resolve().parents[2]
PROBE = ROOT / "probes" / "imports.py"

LIBRARIES: dict[str, dict[str, Any]] = {
    "brokenlib": {
        "requires": ["jax>=0.4"],
        "files": {"brokenlib/__init__.py": "import jax\nFUNCTIONS = (jax.interpreters.xla.xe.PjitFunction,)\n"},
    },
    "multilib": {  # a lazy top level, as tensorflow-probability's; its JAX users import multilib.substrates.jax
        "requires": ["numpy", 'jax; extra == "jax"', 'tensorflow_not_installed; extra == "tf"'],
        "files": {
            "multilib/__init__.py": "",
            "multilib/substrates/__init__.py": "",
            "multilib/substrates/jax/__init__.py": "import jax.numpy as jnp\nONES = jnp.ones\n",
            "multilib/python/__init__.py": "",
            "multilib/python/backend/__init__.py": "",
            "multilib/python/backend/jax/__init__.py": "raise RuntimeError('only the shallowest jax package')\n",
        },
    },
    "tflib": {  # its top level needs TensorFlow, which only an extra asks for
        "requires": ['jax; extra == "jax"', 'tensorflow_not_installed; extra == "tf"'],
        "files": {"tflib/__init__.py": "import tensorflow_not_installed\n"},
    },
    "goodlib": {"requires": ["jax"], "files": {"goodlib/__init__.py": "import jax\nVERSION = jax.__version__\n"}},
    "nsroot-part": {  # a namespace package (no __init__.py at its top), like orbax
        "requires": ["jaxlib"],
        "files": {"nsroot/part/__init__.py": "import jax\n"},
    },
    "srctree": {  # flax 0.10.0: its wheel ships flaxlib/, a Rust project's source tree with no compiled module
        "requires": ["jax"],
        "top_level": ["srctree", "srclib"],
        "files": {
            "srctree/__init__.py": "import jax\n",
            "srclib/Cargo.toml": "[package]\nname = 'srclib'\n",
            "srclib/pyproject.toml": "[build-system]\nrequires = ['maturin']\n",
            "srclib/srclib/__init__.py": "from .srclib import *\n",
        },
    },
    "unrelated": {"requires": ["numpy"], "files": {"unrelated/__init__.py": "raise RuntimeError('never imported')\n"}},
    "forgetful": {  # objax 1.8.0: `import objax` imports six, which it declares nowhere
        "requires": ["jax", 'tensorflow_not_installed; extra == "tf"'],
        "files": {"forgetful/__init__.py": "import jax\nimport six_not_installed\n"},
    },
    "keras": {  # Keras 3 declares no framework: on its jax backend it imports jax (3.12 imports jax.export)
        "requires": ["numpy"],
        "version": "3.12.0",
        "files": {
            "keras/__init__.py": "import os\nif os.environ.get('KERAS_BACKEND') == 'jax':\n    import jax.gone\n",
            "keras/src/__init__.py": "",
            "keras/src/backend/__init__.py": "",
            "keras/src/backend/jax/__init__.py": "raise RuntimeError('not the configured backend')\n",
        },
    },
    "throughlib": {  # haliax 1.2: requires equinox, not jax, and fails at its import on jax's API
        "requires": ["goodlib>=1"],
        "files": {"throughlib/__init__.py": "import jax.random\nKEY = jax.random.KeyArray\n"},
    },
    "viaextra": {  # Keras requires optree, which names jax for an extra only: not on jax through it
        "requires": ["multilib"],
        "files": {"viaextra/__init__.py": "raise RuntimeError('never imported')\n"},
    },
    "lazylib": {  # phiml 1.2.1: declares no jax; its JAX backend is loaded only once a user picks JAX
        "requires": ["numpy"],
        "files": {
            "lazylib/__init__.py": "",
            "lazylib/backend/__init__.py": "",
            "lazylib/backend/jax/__init__.py": "from jax.config import config\n",
        },
    },
}


def install(site: Path, libraries: dict[str, dict[str, Any]] | None = None) -> None:
    """The libraries (LIBRARIES by default) as pip installs them: their files, and their .dist-info with METADATA,
    RECORD and (for some) top_level.txt."""
    for name, lib in (LIBRARIES if libraries is None else libraries).items():
        info = site / f"{name.replace('-', '_')}-{lib.get('version', '1.0')}.dist-info"
        info.mkdir(parents=True)
        lines = [f"Metadata-Version: 2.1\nName: {name}\nVersion: {lib.get('version', '1.0')}\n"]
        lines += [f"Requires-Dist: {req}\n" for req in lib["requires"]]
        (info / "METADATA").write_text("".join(lines), encoding="utf-8")
        for path, text in lib["files"].items():
            (site / path).parent.mkdir(parents=True, exist_ok=True)
            (site / path).write_text(text, encoding="utf-8")
        record = [*lib["files"], f"{info.name}/METADATA", f"{info.name}/RECORD"]
        (info / "RECORD").write_text("".join(f"{p},,\n" for p in record), encoding="utf-8")
        if name != "nsroot-part":  # pip writes top_level.txt for setuptools builds only
            tops = lib.get("top_level", [name.replace("-", "_")])
            (info / "top_level.txt").write_text("".join(f"{t}\n" for t in tops), encoding="utf-8")


@pytest.fixture
def site(tmp_path: Path) -> Path:
    where = tmp_path / "site"
    install(where)
    return where


def _env(site: Path) -> dict[str, str]:
    return {**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, "PYTHONPATH": str(site)}


def test_the_probe_imports_what_depends_on_jax_and_tells_each_kind_apart(site: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(PROBE)], capture_output=True, text=True, env=_env(site), timeout=240, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout)
    outcomes = {o["module"]: o for o in result["facts"]["imports"]}
    broken = outcomes["brokenlib"]
    assert broken["status"] == "error" and broken["distribution"] == "brokenlib" and broken["version"] == "1.0"
    assert broken["error"] == "AttributeError: module 'jax.interpreters.xla' has no attribute 'xe'"
    assert broken["where"] == "brokenlib/__init__.py:2"
    assert outcomes["tflib"]["status"] == "needs" and "tensorflow_not_installed" in outcomes["tflib"]["error"]
    assert outcomes["multilib"]["status"] == "ok" and outcomes["multilib.substrates.jax"]["status"] == "ok"
    assert "multilib.python.backend.jax" not in outcomes  # the shallowest jax package only
    assert outcomes["goodlib"]["status"] == "ok" and outcomes["nsroot.part"]["status"] == "ok"
    assert "unrelated" not in outcomes and "nsroot" not in outcomes  # no jax requirement; a namespace's packages
    assert outcomes["forgetful"]["status"] == "error" and "six_not_installed" in outcomes["forgetful"]["error"]
    assert "keras" not in outcomes  # its backend here is TensorFlow's, Keras 3's default
    assert "keras.src.backend.jax" not in outcomes  # Keras ships every backend: its jax package is not its use
    through = outcomes["throughlib"]  # on jax through a library that requires it
    assert through["status"] == "error" and "KeyArray" in through["error"] and through["version"] == "1.0"
    assert "viaextra" not in outcomes  # it requires a library that names jax for an extra only
    assert outcomes["lazylib"]["status"] == "ok"  # its top level works; its JAX backend does not
    lazy = outcomes["lazylib.backend.jax"]
    assert lazy["status"] == "error" and lazy["distribution"] == "lazylib" and "config" in lazy["error"]
    assert outcomes["srctree"]["status"] == "ok"
    assert not [m for m in outcomes if m.startswith("srclib")]  # a source tree shipped by mistake is no package
    assert "jax.scipy.linalg" in outcomes and outcomes["jax.scipy.linalg"]["distribution"] == "jax"
    assert result["metrics"]["failed"] == 4
    on_jax = subprocess.run(
        [sys.executable, str(PROBE)], capture_output=True, text=True, env={**_env(site), "KERAS_BACKEND": "jax"}
    )
    keras = {o["module"]: o for o in json.loads(on_jax.stdout)["facts"]["imports"]}["keras"]
    assert keras["status"] == "error" and keras["version"] == "3.12.0" and "jax.gone" in keras["error"]
    # each import is announced before it starts, so a crash or a hang in it is named by the child's last words
    assert "envaudit imports: importing brokenlib (brokenlib 1.0)" in done.stderr


def test_an_import_hook_that_raises_is_that_library_s_failure_and_the_others_are_still_tried(site: Path) -> None:
    """A finder that raises for one library (a sitecustomize's import hook) was asked before its import, outside
    the import's own guard: the probe's imports ended there, and every library after it went untried, unsaid."""
    hook = "class Fault:\n    def find_spec(self, name, path=None, target=None):\n        if name == 'goodlib':\n"
    hook += "            raise ImportError('injected fault')\nimport sys\nsys.meta_path.insert(0, Fault())\n"
    (site / "sitecustomize.py").write_text(hook, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(PROBE)], capture_output=True, text=True, env=_env(site), timeout=240, check=False
    )
    outcomes = {o["module"]: o for o in json.loads(done.stdout)["facts"]["imports"]}
    assert outcomes["goodlib"]["status"] == "error" and outcomes["goodlib"]["error"] == "ImportError: injected fault"
    assert outcomes["multilib"]["status"] == "ok" and outcomes["nsroot.part"]["status"] == "ok"  # after it


def test_an_audit_fails_the_library_that_does_not_import_under_the_rule_its_message_names(site: Path) -> None:
    done = envaudit_run(sys.executable, "--probe", "imports", "--format", "json", env=_env(site), timeout=300)
    report = json.loads(done.stdout)
    found = {f["id"]: f for f in report["findings"]}
    assert done.returncode == 1, found
    broken = found["import-fails-brokenlib"]
    assert broken["severity"] == "fail" and "brokenlib 1.0" in broken["detail"]
    assert "module 'jax.interpreters.xla' has no attribute 'xe'" in broken["detail"]
    # the message is the one jax-api-missing knows: one root cause, the import its consequence
    assert broken["caused_by"] == "jax-api-missing" and not found["jax-api-missing"]["caused_by"]
    # a dependency a library forgot to declare fails its import, with nothing to blame but the library
    forgetful = found["import-fails-forgetful"]
    assert "No module named 'six_not_installed'" in forgetful["detail"]
    # and installing what it forgot is the fix (objax 1.8.0 and six), into this environment
    assert "install" in forgetful["fix"] and "six-not-installed" in forgetful["fix"].replace("_", "-")
    assert "six-not-installed" in report["plan"]["fix"].replace("_", "-")
    # a library on jax through another, and one whose JAX backend does not import, are each their own failure
    # with the same root: jax's API that is gone
    for name in ("throughlib", "lazylib"):
        assert found[f"import-fails-{name}"]["caused_by"] == "jax-api-missing", found[f"import-fails-{name}"]
    failing = ("brokenlib", "forgetful", "throughlib", "lazylib")
    assert not any(i.startswith("import-fails-") and i[13:] not in failing for i in found)
    imports = report["facts"]["jax"]["imports"]
    wanted = {"brokenlib", "forgetful", "throughlib", "lazylib.backend.jax"}
    assert {o["module"] for o in imports if o["status"] == "error"} == wanted


def test_an_import_that_hangs_is_named_and_the_probe_still_answers_inside_its_bound(tmp_path: Path) -> None:
    """An import runs in C and cannot be interrupted: the probe answers at 70 % of its bound with what it saw, the
    import in flight named and not failed (a slow import is no fault), and the audit goes on."""
    where = tmp_path / "site"
    LIBRARIES["aaa-hangs"] = {"requires": ["jax"], "files": {"aaa_hangs/__init__.py": "import time\ntime.sleep(600)\n"}}
    try:
        install(where)
    finally:
        del LIBRARIES["aaa-hangs"]
    done = envaudit_run(
        sys.executable, "--probe", "imports", "--timeout", "8", "--format", "json", env=_env(where), timeout=300
    )
    report = json.loads(done.stdout)
    probe = next(p for p in report["probes"] if p["name"] == "imports")
    assert probe["status"] == "pass" and probe["duration_s"] < 8, probe
    outcomes = {o["module"]: o for o in report["facts"]["jax"]["imports"]}
    assert outcomes["aaa_hangs"]["status"] == "not_tried" and "still importing" in outcomes["aaa_hangs"]["error"]
    assert outcomes["brokenlib"]["status"] == "not_tried"  # not reached: unknown, not failed
    assert not any(f["id"].startswith("import-fails-") for f in report["findings"]), report["findings"]


NUMPY1_WORDS = (  # what NumPy 2 prints when a module built against NumPy 1 is imported (v2.0.0, lines 22-31)
    "A module that was compiled using NumPy 1.x cannot be run in\n"
    "NumPy 2.0.0 as it may crash. To support both 1.x and 2.x\n"
    "versions of NumPy, modules must be compiled with NumPy 2.0.\n"
)


def test_an_import_that_kills_the_process_keeps_its_last_words_and_the_rule_they_name_is_the_cause(
    tmp_path: Path,
) -> None:
    """jax 0.4.30 + tensorstore 0.1.56 under NumPy 2: NumPy's message on stderr, then SIGSEGV. The crash once kept
    one line ("importing ..."), so only "report upstream" was left; now the imports seen before it stay, the one in
    flight is that library's failure with the words it printed, and the rule those words name is the root."""
    site = tmp_path / "site"
    crash = "import os, signal, sys\nsys.stderr.write(" + repr(NUMPY1_WORDS) + ")\n"
    crash += "sys.stderr.write('AttributeError: _ARRAY_API not found\\n')\nsys.stderr.flush()\n"
    # a real SIGSEGV is synchronous; one sent by kill() is handled meanwhile (faulthandler dumps, then re-raises it):
    # the import waits for it, as the crashing C code would never return
    crash += "os.kill(os.getpid(), signal.SIGSEGV)\nimport time\ntime.sleep(60)\n"
    crashing = {"requires": ["jax", "numpy"], "version": "0.1.56", "files": {"zcrashlib/__init__.py": crash}}
    install(site, {"goodlib": LIBRARIES["goodlib"], "zcrashlib": crashing})
    env = {**_env(site), "ENVAUDIT_CACHE_DIR": str(tmp_path / "cache")}
    done = envaudit_run(sys.executable, "--probe", "imports", "--format", "json", env=env, timeout=300)
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    report = json.loads(done.stdout)
    probe = next(p for p in report["probes"] if p["name"] == "imports")
    assert probe["status"] == "crash" and "SIGSEGV" in probe["message"]
    assert "AttributeError: _ARRAY_API not found" in probe["stderr"]
    assert any("compiled using NumPy 1.x" in line for line in probe["stderr"])
    outcomes = {o["module"]: o for o in report["facts"]["jax"]["imports"]}
    assert outcomes["goodlib"]["status"] == "ok"  # found before the crash, kept
    lost = outcomes["zcrashlib"]
    assert lost["status"] == "error" and lost["version"] == "0.1.56" and "SIGSEGV" in lost["error"]
    found = {f["id"]: f for f in report["findings"]}
    assert done.returncode == 1, found
    assert found["numpy2-module-built-for-numpy1"]["severity"] == "fail"
    assert not found["numpy2-module-built-for-numpy1"]["caused_by"]
    assert found["import-fails-zcrashlib"]["caused_by"] == "numpy2-module-built-for-numpy1"


def test_the_submodules_envaudit_asks_for_are_imported_where_the_top_level_works(tmp_path: Path) -> None:
    """transformers 4.31.0's Flax models use jnp.DeviceArray, gone in jax 0.4.14, but `import transformers` is lazy
    and worked: the build took it for the models, cleared the table's entry and said OK. The modules a table names
    are asked for (ENVAUDIT_SUBMODULES) and imported too, each its own outcome. Unasked, the probe reads the
    library's code and imports the module for its use of a name this jax lacks (`read`)."""
    site = tmp_path / "site"
    files = {
        "lazylib/__init__.py": "VERSION = 1\n",
        "lazylib/models/__init__.py": "",
        "lazylib/models/flax_model.py": "import jax.numpy as jnp\nARRAY = jnp.DeviceArray\n",
    }
    install(site, {"lazylib": {"requires": ["jax"], "files": files}})

    def outcomes(**extra: str) -> dict[str, dict[str, Any]]:
        env = {**_env(site), **extra}
        done = subprocess.run([sys.executable, str(PROBE)], capture_output=True, text=True, env=env, timeout=240)
        return {o["module"]: o for o in json.loads(done.stdout)["facts"]["imports"] if o["distribution"] == "lazylib"}

    unasked = outcomes()
    assert set(unasked) == {"lazylib", "lazylib.models.flax_model"}
    assert unasked["lazylib.models.flax_model"]["read"] == "jax.numpy.DeviceArray (lazylib/models/flax_model.py:2)"
    asked = outcomes(ENVAUDIT_SUBMODULES="other=x.y;lazylib=lazylib.models.flax_model,not a module")
    assert asked["lazylib"]["status"] == "ok"
    model = asked["lazylib.models.flax_model"]
    assert model["status"] == "error" and "DeviceArray" in model["error"]
    assert set(asked) == {"lazylib", "lazylib.models.flax_model"} and "read" not in model


def test_a_library_envaudit_names_is_imported_though_it_declares_no_jax(tmp_path: Path) -> None:
    """PennyLane 0.45.1 requires no jax and ships no `jax` package (its jax interface is a module,
    pennylane/workflow/interfaces/jax.py): the probe passed it over. A library the build names (ENVAUDIT_IMPORT,
    collect/build.py: a planned library around jax) is imported whatever it declares; Keras keeps its backend's
    rule; a name not installed is nothing."""
    site = tmp_path / "site"
    files = {"ifacelib/__init__.py": "import jax.numpy as jnp\nARRAY = jnp.DeviceArray\n"}
    install(site, {"ifacelib": {"requires": ["numpy", "autograd"], "files": files}})

    def outcomes(**extra: str) -> dict[str, dict[str, Any]]:
        env = {**_env(site), **extra}
        done = subprocess.run([sys.executable, str(PROBE)], capture_output=True, text=True, env=env, timeout=240)
        said = json.loads(done.stdout)
        return {o["module"]: o for o in said.get("facts", {}).get("imports", []) if o["distribution"] == "ifacelib"}

    assert outcomes() == {}
    named = outcomes(ENVAUDIT_IMPORT="not-installed, IfaceLib")
    assert named["ifacelib"]["status"] == "error" and "DeviceArray" in named["ifacelib"]["error"]


def test_eighty_libraries_that_raise_long_errors_are_each_still_their_own_failure(tmp_path: Path) -> None:
    """The probe's answer is one protocol line, read up to 256 KiB: 80 libraries raising 3 KB each made it longer,
    the line was cut, and every `import-fails-*` was lost to one probe error. Each outcome is kept, its text cut."""
    site = tmp_path / "site"
    loud = {f"loud{n}/__init__.py": f"raise RuntimeError('loud{n} ' + 'x' * 3000)\n" for n in range(80)}
    install(
        site,
        {
            f"loud{n}": {"requires": ["jax"], "files": {f"loud{n}/__init__.py": loud[f"loud{n}/__init__.py"]}}
            for n in range(80)
        },
    )
    env = {**_env(site), "ENVAUDIT_CACHE_DIR": str(tmp_path / "cache")}
    done = envaudit_run(sys.executable, "--probe", "imports", "--format", "json", env=env, timeout=300)
    report = json.loads(done.stdout)
    probe = next(p for p in report["probes"] if p["name"] == "imports")
    assert probe["status"] == "pass" and probe["metrics"]["failed"] == 80, probe["message"][:300]
    found = {f["id"] for f in report["findings"]}
    assert {f"import-fails-loud{n}" for n in range(80)} <= found
    errors = [o["error"] for o in report["facts"]["jax"]["imports"] if o["distribution"].startswith("loud")]
    assert len(errors) == 80 and all(e.startswith("RuntimeError: loud") for e in errors)


READ: dict[str, dict[str, Any]] = {
    "partlib": {  # jaxline 0.0.5: `import jaxline` works, `from jaxline import experiment` raises (jnp.DeviceArray)
        "requires": ["jax"],
        "files": {
            "partlib/__init__.py": "import jax\n",
            "partlib/experiment.py": "import jax.numpy as jnp\n\nArray = jnp.DeviceArray\n",
            "partlib/tests/test_old.py": "import jax.numpy as jnp\nX = jnp.DeviceArray\n",  # not package code
        },
    },
    "calllib": {  # pytensor 2.14.2: its JAX dispatch calls jnp.product inside a function, which no import runs
        "requires": ["jax"],
        "files": {
            "calllib/__init__.py": "from calllib import ops\n",
            "calllib/ops.py": "import jax.numpy as jnp\n\ndef total(x):\n    return jnp.product(x)\n",
            # version-compatible code: never read as a break
            "calllib/compat.py": "import jax.numpy as jnp\ntry:\n    A = jnp.DeviceArray\nexcept AttributeError:\n"
            "    A = None\n\ndef f(x):\n    if hasattr(jnp, 'product'):\n        return jnp.product(x)\n"
            "    return jnp.prod(x)\n",
        },
    },
}


def test_a_library_s_code_no_import_reaches_is_read_and_what_breaks_there_is_measured(tmp_path: Path) -> None:
    install(tmp_path, READ)
    done = envaudit_run(sys.executable, "--probe", "imports", "--format", "json", env=_env(tmp_path), timeout=300)
    report = json.loads(done.stdout)
    imports = {o["module"]: o for o in report["facts"]["jax"]["imports"]}
    # the module whose import uses a name this jax lacks was imported, and raised as a user's import would
    part = imports["partlib.experiment"]
    assert part["status"] == "error" and "has no attribute 'DeviceArray'" in part["error"], part
    assert part["read"] == "jax.numpy.DeviceArray (partlib/experiment.py:3)"
    assert "partlib.tests.test_old" not in imports and "calllib.compat" not in imports
    # the call-time use is one call read, not made, with the line and what resolving the name raised
    calls = [c for c in report["facts"]["jax"].get("calls", []) if c["distribution"] == "calllib"]
    assert [(c["call"], c["read"], c["where"]) for c in calls] == [
        ("calllib.ops.total", "jax.numpy.product", "calllib/ops.py:4")
    ], calls
    assert "has no attribute 'product'" in calls[0]["error"]
    # each is a warning about its library with a newer release of it as the fix: a part of the library breaks,
    # the user's program is not known to reach it
    found = {f["id"]: f for f in report["findings"]}
    assert found["import-fails-partlib"]["severity"] == "warn", found["import-fails-partlib"]
    assert (
        found["call-fails-calllib"]["severity"] == "warn"
        and "read, not called" in found["call-fails-calllib"]["detail"]
    )
    assert "partlib>1.0" in report["plan"]["fix"] and "calllib>1.0" in report["plan"]["fix"], report["plan"]
    assert done.returncode == 0, report["verdict"]
