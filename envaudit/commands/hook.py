"""`envaudit hook enable|disable|status`: an opt-in import-time warning, and its cold-path evaluation.

Nothing is enabled by installing envaudit (pytest-cov's always-on `.pth` was dropped because users could not opt
out): `enable` writes one guarded line as `envaudit-hook.pth` into the interpreter's site-packages (or the user
site with `--user`). The line stays silent when envaudit is uninstalled, honours `ENVAUDIT_HOOK=0`, and reports
any failure of its own in one line instead of site.py's traceback.
"""

from __future__ import annotations

import argparse
import json
import site
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, cast

from envaudit.commands import options
from envaudit.commands.options import Command
from envaudit.files import cachedir, safewrite
from envaudit.model.exitcodes import SHOWING, Exit, UsageError

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


@dataclass(frozen=True)
class Site:
    """Where the hook can be enabled, and whether it is."""

    user: bool  # the user site-packages (else the environment's)
    path: Path  # its .pth file there
    enabled: bool


@dataclass(frozen=True)
class Status:
    """The hook's state for an environment: its sites, and the verdict it cached (None: none yet)."""

    sites: tuple[Site, ...]
    cached: tuple[tuple[str, str], ...] | None  # (severity, id) of each finding it warns of

    def lines(self) -> list[str]:
        """For a terminal."""
        said = [
            f"{'user site' if s.user else 'site-packages'}: {'enabled' if s.enabled else 'not enabled'} ({s.path})"
            for s in self.sites
        ]
        if self.cached is None:
            return [*said, "no cached verdict for this environment yet (the next `import jax` computes it)"]
        verdict = ", ".join(f"{severity} {rule}" for severity, rule in self.cached) or "no warnings"
        return [*said, f"cached verdict for this environment: {verdict}"]

    def to_dict(self) -> dict[str, object]:
        """For a program: the same values."""
        return {
            "sites": [{"user": s.user, "path": str(s.path), "enabled": s.enabled} for s in self.sites],
            "cached": None if self.cached is None else [{"severity": v, "id": i} for v, i in self.cached],
        }


def status(python: str | None = None) -> Status:
    """Where the hook is enabled and the verdict cached, for this interpreter or (`--python`) another one: that
    interpreter says where its site-packages are and computes its own cache key, as its hook would."""
    sites, key = _where(python) if python else ([site_dir(False), site_dir(True)], None)
    pairs = zip((False, True), sites, strict=True)
    found = tuple(Site(user, where / PTH_NAME, (where / PTH_NAME).exists()) for user, where in pairs)
    if key is None:
        key = cachedir.fingerprint()
    cached = cachedir.read_json(f"hook-{key}.json")
    if not isinstance(cached, list):
        return Status(found, None)
    return Status(found, tuple((str(f.get("severity")), str(f.get("id"))) for f in cached if isinstance(f, dict)))


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
    from envaudit.files import safedir

    here = str(Path(__file__).resolve().parents[2])  # the directory envaudit/ is in
    try:
        # `-c` puts the working directory first on sys.path: a json.py the caller's holds would run there (as root,
        # for `hook status` in /tmp). Not `-I`: the key lists sys.path as the hook there sees it (PYTHONPATH, the
        # user site), so the interpreter starts as its hook's would, in an empty directory of envaudit's own
        with safedir.scratch("envaudit-hook-") as home:
            argv = [python, "-c", WHERE, here]
            done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True, cwd=home)
        purelib, user, key = json.loads(done.stdout)
    except (OSError, ValueError, subprocess.SubprocessError) as exc:
        raise InterpreterError(
            f"--python {python}: cannot ask it where its hook lives ({type(exc).__name__})"
        ) from None
    return [Path(purelib), Path(user)], str(key)


Action = Literal["enable", "disable", "status"]


@dataclass(frozen=True)
class HookOptions:
    action: Action
    user: bool = False
    python: str | None = None
    format: options.ListFormat = "text"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "action",
        choices=["enable", "disable", "status"],
        help="enable: a .pth line in site-packages that checks at `import jax`; disable: remove it; status: where"
        " it is enabled, and the cached verdict",
    )
    p.add_argument("--user", action="store_true", help="enable in the user site-packages instead")
    p.add_argument("--python", metavar="PATH", help="status: of this interpreter's environment instead")
    options.add_list_format(p)


def parse(parsed: argparse.Namespace) -> HookOptions:
    return HookOptions(cast(Action, parsed.action), parsed.user, parsed.python, options.list_format(parsed))


def run(o: HookOptions) -> int:
    if o.python and o.action != "status":
        raise UsageError("--python is for `hook status`: enable or disable the hook with that interpreter itself")
    if o.action == "enable":
        print(f"envaudit hook enabled: {enable(o.user)}")
    elif o.action == "disable":
        removed = disable()
        print("envaudit hook disabled: " + (", ".join(map(str, removed)) if removed else "it was not enabled"))
    else:
        from envaudit.collect import outside

        found = status(outside.resolve(o.python) if o.python else None)
        print(json.dumps(found.to_dict(), indent=2) if o.format == "json" else "\n".join(found.lines()))
    return Exit.OK


COMMAND = Command(
    "hook",
    "opt-in warning when jax is imported into a known-bad environment",
    add_arguments,
    parse,
    run,
    examples=(
        ("envaudit hook enable --user", "warn at `import jax` in the user site-packages' interpreters"),
        ("envaudit hook status --python ~/envs/ntk/bin/python", "where it is enabled, and the cached verdict"),
        ("envaudit hook disable", "remove it"),
    ),
    exits=SHOWING,
    exit_words=((Exit.OK, "done"),),
)
