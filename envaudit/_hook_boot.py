"""The import-time hook, as loaded by the `.pth` line: standard library only, and nothing done until jax arrives.

`install()` puts a finder on `sys.meta_path` that does nothing but wait for the first import of jax, flax or
neural-tangents. When that module has finished executing, the hook fingerprints what the verdict depends on
(distribution directories and their versions, the NVIDIA driver version from /proc, the relevant environment
variables, envaudit's version and rule files) and, on a cache hit, emits the cached findings through `warnings`:
no NVML, no subprocess, no probe, a few stat calls. Only a cache miss imports the rest of envaudit to evaluate.
It never imports jax itself, never initialises a backend and never changes jax's configuration.
"""

from __future__ import annotations

import _thread
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: typing and collections.abc would cost ~10 ms at every Python start
    from collections.abc import Sequence
    from importlib.machinery import ModuleSpec
    from types import ModuleType
    from typing import Any, TypeGuard

TRIGGERS = ("jax", "flax", "neural_tangents")
FINDING_KEYS = ("id", "severity", "title", "fix")
_state = {"fired": False}
IMPORTLIB_EXTERNAL = "<frozen importlib._bootstrap_external>"
_searching: set[int] = set()  # threads inside _Finder.find_spec: a finder that delegates back finds nothing here


def valid(cached: object) -> TypeGuard[list[dict[str, str]]]:
    """A cached verdict as `evaluate_now` writes it: a list of findings with their text fields (else recomputed)."""
    return isinstance(cached, list) and all(
        isinstance(f, dict)
        and all(isinstance(f.get(k), str) for k in FINDING_KEYS)
        and isinstance(f.get("detail", ""), str)
        for f in cached
    )


def escalated_for_all(text: str) -> bool:
    """The filter `warnings` would apply is "error" for every warning (`-W error`, PYTHONWARNINGS=error, pytest's
    filterwarnings = error), not for EnvAuditWarning by name: then raising would break a working `import jax`."""
    import warnings

    from envaudit import EnvAuditWarning

    for action, message, category, module, lineno in warnings.filters:
        kind = category if isinstance(category, type) else Warning
        if (
            (message is None or message.match(text))
            and issubclass(EnvAuditWarning, kind)
            and (module is None or module.match("envaudit"))
            and lineno in (0, None)
        ):
            return action == "error" and not issubclass(kind, EnvAuditWarning)
    return False


def emit(findings: list[dict[str, str]]) -> None:
    """One warning line per finding: `envaudit: [rule-id] title. Fix: command`. Escalated by name, it raises (the
    user asked for the import to fail); escalated with every other warning, it is printed as warnings would."""
    import warnings

    from envaudit import EnvAuditWarning

    for f in findings:
        detail = f": {f['detail']}" if f.get("detail") else ""
        text = f"[{f.get('id')}] {f.get('title')}{detail}. Fix: {f.get('fix')}"
        if escalated_for_all(text):
            sys.stderr.write(f"envaudit:0: EnvAuditWarning: {text}\n")
            continue
        warnings.warn_explicit(text, EnvAuditWarning, "envaudit", 0, module="envaudit")


def on_failure(exc: BaseException) -> None:
    """Importing jax (flax, neural-tangents) raised: print each root cause the facts show, once, then let the
    exception go on as it was. Never raises: a failure here is one more line, not another exception."""
    if _state["fired"] or os.environ.get("ENVAUDIT_HOOK", "1") == "0":
        return
    _state["fired"] = True
    try:
        from envaudit.judge.hook import explain_failure

        sys.stderr.write(explain_failure(exc))
    except Exception as inner:
        sys.stderr.write(f"envaudit: import hook failed: {type(inner).__name__}: {inner}\n")


def on_import(module: ModuleType) -> None:
    if _state["fired"] or os.environ.get("ENVAUDIT_HOOK", "1") == "0":
        return
    _state["fired"] = True
    from envaudit import EnvAuditWarning

    try:
        from envaudit.files import cachedir
        from envaudit.files.cachedir import fingerprint

        name = f"hook-{fingerprint()}.json"
        cached = cachedir.read_json(name)
        if not valid(cached):
            from envaudit.judge.hook import cacheable, evaluate_now

            jax = sys.modules.get("jax")
            cached = evaluate_now(getattr(jax, "config", None))
            cachedir.write_json(name, cacheable(cached))
        emit(cached)
    except EnvAuditWarning:
        raise  # -W error::envaudit.EnvAuditWarning: the user asked for the import to fail
    except Exception as exc:  # the hook must never break the user's program: one line, then carry on
        sys.stderr.write(f"envaudit: import hook failed: {type(exc).__name__}: {exc}\n")


class _Finder:
    """Finds nothing itself: wraps the real loader of a trigger module so `on_import` runs after it executed."""

    def find_spec(self, fullname: str, path: Sequence[str] | None = None, target: Any = None) -> ModuleSpec | None:
        me = _thread.get_ident()
        if fullname not in TRIGGERS or _state["fired"] or me in _searching:
            return None  # in particular when another finder that delegates to the meta path asks us back
        _searching.add(me)
        try:
            return self._wrapped(fullname, path, target)
        finally:
            _searching.discard(me)

    def _wrapped(self, fullname: str, path: Sequence[str] | None, target: Any) -> ModuleSpec | None:
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec: ModuleSpec | None = finder.find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None and hasattr(spec.loader, "exec_module"):
                inner = spec.loader.exec_module

                def exec_module(module: ModuleType, inner: Any = inner) -> None:
                    try:
                        inner(module)
                    except Exception as exc:
                        on_failure(exc)
                        raise  # unchanged, and without this frame in its traceback (below)
                    on_import(module)

                # Marked as import machinery, this frame is trimmed from a failing import's traceback with
                # importlib's own (CPython's remove_importlib_frames), so the user sees the traceback they would
                # see without the hook.
                exec_module.__code__ = exec_module.__code__.replace(co_filename=IMPORTLIB_EXTERNAL)
                spec.loader.exec_module = exec_module  # type: ignore[method-assign]
                return spec
            if spec is not None:
                return None
        return None


def apply_warning_options(options: Sequence[str]) -> None:
    """Python resolves `-W error::envaudit.EnvAuditWarning` before site-packages is on sys.path, finds no envaudit
    and ignores the option ("Invalid -W option ignored"). The hook runs later, from site-packages, so it applies
    the options that name its category itself, in the -W syntax action:message:category:module:lineno."""
    import warnings

    from envaudit import EnvAuditWarning

    actions = ("default", "error", "ignore", "always", "module", "once")
    for option in options:
        parts = [p.strip() for p in option.split(":")] + [""] * 5
        if parts[2].rsplit(".", 1)[-1] != "EnvAuditWarning":
            continue
        action = next((a for a in actions if parts[0] and a.startswith(parts[0])), None)
        if action is not None:
            lineno = int(parts[4]) if parts[4].isdigit() else 0
            warnings.filterwarnings(action, parts[1], EnvAuditWarning, parts[3], lineno)  # type: ignore[arg-type]


def install() -> None:
    """Idempotent: a second call (a second .pth, a re-import) adds nothing."""
    if os.environ.get("ENVAUDIT_HOOK", "1") == "0" or any(isinstance(f, _Finder) for f in sys.meta_path):
        return
    if any("EnvAuditWarning" in option for option in sys.warnoptions):
        apply_warning_options(sys.warnoptions)
    if any(name in sys.modules for name in TRIGGERS):
        return  # already imported: too late to watch, and never re-import it
    sys.meta_path.insert(0, _Finder())
