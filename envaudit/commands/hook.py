"""`envaudit hook enable|disable|status`: an opt-in import-time warning, and its cold-path evaluation.

Nothing is enabled by installing envaudit (pytest-cov's always-on `.pth` was dropped because users could not opt
out): `enable` writes one guarded line as `envaudit-hook.pth` into the interpreter's site-packages (or the user
site with `--user`). The line stays silent when envaudit is uninstalled, honours `ENVAUDIT_HOOK=0`, and reports
any failure of its own in one line instead of site.py's traceback.
"""

from __future__ import annotations

import site
import sysconfig
from pathlib import Path
from typing import Any

from envaudit.files import cachedir, safewrite
from envaudit.rules.checks import BOARD, TRANSIENT

PTH_NAME = "envaudit-hook.pth"
_BOOT = """if not getattr(sys, "_envaudit_hook_seen", False):
 sys._envaudit_hook_seen = True
 try:
  import envaudit._hook_boot as b; b.install()
 except ModuleNotFoundError as e:
  if not str(e.name or "").startswith("envaudit"):
   sys.stderr.write("envaudit: import hook failed: %s: %s\\n" % (type(e).__name__, e))
 except BaseException as e:
  sys.stderr.write("envaudit: import hook failed: %s\\n" % ("%s: %s" % (type(e).__name__, e)).rstrip(": "))
"""
# site.py executes a .pth line that starts with "import": one line, so the guarded block travels through exec().
# Uninstalled envaudit (or a leftover empty envaudit/ directory) is silence; some venvs process site-packages
# twice, hence the flag on sys; anything else is one line on stderr. Anything means BaseException: site.py catches
# only Exception, so a package named envaudit earlier on sys.path that calls sys.exit (or raises KeyboardInterrupt)
# would otherwise end every Python start of the environment.
PTH_LINE = f"import os, sys; exec({_BOOT!r}) if os.environ.get('ENVAUDIT_HOOK', '1') != '0' else None\n"


def site_dir(user: bool) -> Path:
    return Path(site.getusersitepackages() if user else sysconfig.get_paths()["purelib"])


def enable(user: bool) -> Path:
    """Write the .pth atomically; enabling twice leaves the same single line. A virtualenv does not load the user
    site-packages (site.ENABLE_USER_SITE is false there), so --user in one would write a line nobody reads."""
    if user and not site.ENABLE_USER_SITE:
        raise safewrite.OutputError(
            "--user would write where this interpreter never looks (user site-packages are off here, as in every "
            "virtualenv); run `envaudit hook enable` without --user"
        )
    target = site_dir(user) / PTH_NAME
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise safewrite.OutputError(f"cannot create {target.parent}: {exc.strerror or exc}") from None
    safewrite.write(target, PTH_LINE)
    return target


def disable() -> list[Path]:
    """Remove the .pth from both the interpreter's and the user's site-packages; the paths removed."""
    removed = []
    for user in (False, True):
        target = site_dir(user) / PTH_NAME
        if target.exists():
            try:
                target.unlink()
            except OSError as exc:
                raise safewrite.OutputError(f"cannot remove {target}: {exc.strerror or exc}") from None
            removed.append(target)
    return removed


def status(python: str | None = None) -> list[str]:
    """Where the hook is enabled and the verdict cached, for this interpreter or (`--python`) another one: that
    interpreter says where its site-packages are and computes its own cache key, as its hook would."""
    sites, key = _where(python) if python else ([site_dir(False), site_dir(True)], None)
    lines = []
    for user, where in zip((False, True), sites, strict=True):
        target = where / PTH_NAME
        state = "enabled" if target.exists() else "not enabled"
        lines.append(f"{'user site' if user else 'site-packages'}: {state} ({target})")
    if key is None:
        key = cachedir.fingerprint()
    cached = cachedir.read_json(f"hook-{key}.json")
    if isinstance(cached, list):
        verdict = ", ".join(f"{f.get('severity')} {f.get('id')}" for f in cached) or "no warnings"
        lines.append(f"cached verdict for this environment: {verdict}")
    else:
        lines.append("no cached verdict for this environment yet (the next `import jax` computes it)")
    return lines


WHERE = (
    "import json, site, sys, sysconfig; sys.path.insert(0, sys.argv[1]);"
    " from envaudit.files.cachedir import fingerprint;"
    " sys.path.remove(sys.argv[1]);"  # the key lists sys.path as the hook there sees it, without envaudit's own
    " print(json.dumps([sysconfig.get_paths()['purelib'], site.getusersitepackages(), fingerprint()]))"
)


def _where(python: str) -> tuple[list[Path], str]:
    """(its site-packages, its user site-packages) and its hook's cache key, from the interpreter itself."""
    import json
    import subprocess

    from envaudit.collect.outside import InterpreterError

    here = str(Path(__file__).resolve().parents[2])  # the directory envaudit/ is in
    try:
        done = subprocess.run([python, "-c", WHERE, here], capture_output=True, text=True, timeout=60, check=True)
        purelib, user, key = json.loads(done.stdout)
    except (OSError, ValueError, subprocess.SubprocessError) as exc:
        raise InterpreterError(
            f"--python {python}: cannot ask it where its hook lives ({type(exc).__name__})"
        ) from None
    return [Path(purelib), Path(user)], str(key)


def evaluate_now(jax_config: Any, failure: BaseException | None = None) -> list[dict[str, str]]:
    """The cold path: static facts (no jax child, no probe), jax's x64 flag and matmul precision as imported (or
    the exception its import raised), and every fail/warn root cause as a small dict for the cache."""
    from envaudit import rules
    from envaudit.collect import snapshot
    from envaudit.judge import causes
    from envaudit.model.facts import JaxFacts

    jax_facts = JaxFacts(status="unknown")  # no child ran: what the rules know of jax is what its config says
    if failure is not None:  # what the audit's jax child would report: jax-broken, and the rules that explain it
        jax_facts = {"status": "import_error", "stage": "import", "message": f"{type(failure).__name__}: {failure}"}
    elif jax_config is not None:
        jax_facts["x64"] = bool(getattr(jax_config, "jax_enable_x64", False))
        precision = getattr(jax_config, "jax_default_matmul_precision", None)
        jax_facts["default_matmul_precision"] = None if precision is None else str(precision)
    facts = snapshot(jax_facts, nvml_s=5.0, origin="hook")
    return [
        {
            "id": f.id,
            "severity": f.severity,
            "title": f.title,
            "fix": f.fix,
            "detail": f.detail if f.subject.kind == "check" else "",
        }
        for f in causes.link(rules.evaluate(facts), facts)
        if f.severity in ("fail", "warn")
        and not f.caused_by
        and f.id not in BOARD  # a GPU's health is `health`'s to judge
    ]


def explain_failure(failure: BaseException) -> str:
    """The lines the hook prints when importing jax (or flax) raised: each root cause, as its warnings read."""
    return "".join(
        f"envaudit: [{f['id']}] {f['title']}{': ' + f['detail'] if f['detail'] else ''}. Fix: {f['fix']}\n"
        for f in evaluate_now(None, failure)
    )


def cacheable(found: list[dict[str, str]]) -> list[dict[str, str]]:
    """What the hook may remember for this environment: not a moment's state (a driver that hung just now)."""
    return [f for f in found if f["id"] not in TRANSIENT]
