"""jax's repository at its release tags, read from a bare git mirror of github.com/jax-ml/jax (the `--jax-git`
directory every derivation that reads the tags takes): the final release tags (`jax-vX.Y.Z`, no `-rc`) from a
release on, oldest first, and a file's text at a tag. Nothing is checked out; `git show TAG:PATH` reads the blob.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from packaging.version import Version

from derive.sources.wheels import final

PREFIX = "jax-v"
URL = "https://github.com/jax-ml/jax/blob/{tag}/{path}#L{line}"


def release_tags(git: Path, first: Version) -> list[tuple[str, Version]]:
    """Each final release tag from `first` on, with its version, oldest first."""
    listed = subprocess.run(
        ["git", f"--git-dir={git}", "tag", "--list", f"{PREFIX}*"], capture_output=True, text=True, check=True
    )
    found = []
    for tag in listed.stdout.split():
        version = final(tag.removeprefix(PREFIX))
        if version is not None and version >= first:
            found.append((tag, version))
    return sorted(found, key=lambda item: item[1])


def files(git: Path, tag: str) -> set[str]:
    """The paths of every file at a tag."""
    listed = subprocess.run(
        ["git", f"--git-dir={git}", "ls-tree", "-r", "--name-only", tag], capture_output=True, text=True, check=True
    )
    return set(listed.stdout.splitlines())


def show(git: Path, tag: str, path: str) -> str | None:
    """A file's text at a tag, None where the tag has no such file."""
    shown = subprocess.run(
        ["git", f"--git-dir={git}", "show", f"{tag}:{path}"], capture_output=True, text=True, check=False
    )
    return shown.stdout if shown.returncode == 0 else None


def url(tag: str, path: str, line: int) -> str:
    """The address of a line of a file at a tag, as envaudit cites a source."""
    return URL.format(tag=tag, path=path, line=line)
