"""pip's requirements-file format, read as pip 26.3 reads it (pip/_internal/req/req_file.py; the format:
https://pip.pypa.io/en/stable/reference/requirements-file-format/).

pip joins a line ending in a backslash with the next (not after a comment), removes comments (`#` at the start or
after whitespace), expands `${NAME}` from the environment (upper-case letters, digits and `_` only), then splits
each line into its requirement (the words before the first one starting with `-`) and its options. A plan is a
judge, not an installer, and its report travels: it expands no variable (a requirement or an include that names one
is refused, naming the variable, never its value; an option's, which chooses no version, is left as written), it
reads includes only inside the directory of the file named to it (`-r /proc/self/environ` in a file is refused),
and an error says where a line is, never what it holds. `-r FILE` includes a requirements file and `-c FILE` a
constraints file, each relative to the file that names it; a file that includes itself, directly or not, is an
error (a diamond is not). `--hash` and `--config-settings` belong to their
line's requirement and change no version; the options of their own lines (`--index-url`, `--find-links`, `--pre`,
...) choose where distributions come from, not which version a pinned line installs. `-e` is an editable direct
reference. A requirement is PEP 508 (`name[extras] specifier ; marker`, `name @ URL`), or a URL or path (pip's
`; ` separates a URL's marker, `;` a path's). A file is read once; its lines' markers are evaluated later, for
the plan's target (`select`), so that the same reading serves every Python a plan is evaluated for.
"""

from __future__ import annotations

import optparse
import os
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from typing import NoReturn
from urllib.parse import unquote

from packaging.requirements import InvalidRequirement, Requirement

from envaudit.commands.plan.inputs import PlanError, files, markers
from envaudit.commands.plan.inputs.values import STDIN, Declared, Source
from envaudit.model.scope import canonicalize_name

MAX_FILES = 64  # files read through -r and -c from one input (a project has a handful)
COMMENT = re.compile(r"(^|\s+)#.*$")  # pip's COMMENT_RE
ENV_VAR = re.compile(r"\$\{(?P<name>[A-Z0-9_]+)\}")  # pip's ENV_VAR_RE
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://|^file:", re.I)  # a URL (pip: is_url), git+https:// among them
REMOTE = re.compile(r"^(https?|file):", re.I)  # pip's SCHEME_RE: an include it would download


@dataclass(frozen=True)
class Line:
    """One requirement line, before its marker is evaluated."""

    text: str  # the requirement, options removed
    source: Source
    constraint: bool = False
    editable: bool = False


class _Options(optparse.OptionParser):
    """pip's requirements-file options (SUPPORTED_OPTIONS and SUPPORTED_OPTIONS_REQ of req_file.py), with an
    error that is a PlanError rather than an exit."""

    def __init__(self) -> None:
        super().__init__(add_help_option=False)
        for names, action in (
            (("-i", "--index-url", "--pypi-url"), "store"),
            (("--extra-index-url",), "append"),
            (("--no-index",), "store_true"),
            (("-c", "--constraint"), "append"),
            (("-r", "--requirement"), "append"),
            (("-e", "--editable"), "append"),
            (("-f", "--find-links"), "append"),
            (("--no-binary",), "append"),
            (("--only-binary",), "append"),
            (("--prefer-binary",), "store_true"),
            (("--require-hashes",), "store_true"),
            (("--no-require-hashes",), "store_true"),
            (("--pre",), "store_true"),
            (("--all-releases",), "append"),
            (("--only-final",), "append"),
            (("--trusted-host",), "append"),
            (("--use-feature",), "append"),
            (("--hash",), "append"),
            (("-C", "--config-settings"), "append"),
        ):
            self.add_option(*names, action=action, dest=names[-1].lstrip("-").replace("-", "_"))

    def error(self, msg: str) -> NoReturn:
        raise PlanError(msg)

    def exit(self, status: int = 0, msg: str | None = None) -> NoReturn:
        raise PlanError(msg or "invalid options")


# the options that take every distribution from elsewhere than the package index (their dest -> their name)
OWN_SOURCES = {"pypi_url": "--index-url", "no_index": "--no-index", "find_links": "--find-links"}


def load(path: str, sources: list[str] | None = None) -> list[Line]:
    """The requirement lines of a requirements file and of every file it includes, in pip's order; `sources`
    collects the lines whose options choose where every distribution comes from instead of the package index
    (`--index-url`, `--no-index`, `--find-links`: named with their line, never their URL, which may hold a token)."""
    found: list[Line] = []
    count = [0]
    root = os.path.dirname(os.path.realpath(path)) if path != STDIN else os.path.realpath(".")
    _read(path, constraint=False, chain=(), found=found, count=count, by=None, root=root, sources=sources)
    return found


def _read(
    path: str,
    *,
    constraint: bool,
    chain: tuple[str, ...],
    found: list[Line],
    count: list[int],
    by: Source | None,
    root: str,
    sources: list[str] | None = None,
) -> None:
    """Read one file's lines into `found`, its includes in place (`by`: the line that includes it)."""
    count[0] += 1
    if count[0] > MAX_FILES:
        raise PlanError(f"{path}: more than {MAX_FILES} requirements files included, so not read")
    what = "a constraints file" if constraint else "a requirements file"
    here = os.path.realpath(path) if path != STDIN else STDIN
    try:
        text = files.read_text(path, what)
    except PlanError as exc:
        raise PlanError(f"{by}: {exc}" if by else str(exc)) from None
    for number, line in _logical_lines(text):
        source = Source(path, number)
        args, options = _split(line)
        if named := ENV_VAR.search(args):
            raise PlanError(
                f"{source}: its requirement names ${{{named['name']}}}, which a plan does not expand (the"
                " value would reach the report): write the version it stands for"
            )
        try:
            opts, _ = _Options().parse_args(_words(options))
        except ValueError as exc:  # shlex: an unclosed quote
            raise PlanError(f"{source}: cannot split its options: {exc}") from None
        except PlanError as exc:
            raise PlanError(f"{source}: {exc}") from None
        if sources is not None:
            sources += [f"{source}: {option}" for dest, option in OWN_SOURCES.items() if getattr(opts, dest, None)]
        if args:
            found.append(Line(args, source, constraint))
        elif opts.editable:
            found.append(Line(opts.editable[0], source, constraint, editable=True))
        elif opts.requirement or opts.constraint:
            nested = (opts.requirement or opts.constraint)[0]
            if "\x00" in nested or not nested.isprintable():
                raise PlanError(f"{source}: it includes a file whose name holds characters no path has")
            if named := ENV_VAR.search(nested):
                raise PlanError(
                    f"{source}: it includes a file named by ${{{named['name']}}}, which a plan does not expand"
                )
            if REMOTE.match(nested) or REMOTE.match(path):
                raise PlanError(f"{source}: {nested} is a URL; a plan reads no network (download it and name the file)")
            joined = os.path.normpath(os.path.join(os.path.dirname(path) if path != STDIN else "", nested))
            if os.path.realpath(joined) in (*chain, here):
                raise PlanError(f"{joined} recursively references itself in {source}")
            if os.path.commonpath([root, os.path.realpath(joined)]) != root:
                raise PlanError(f"{source}: it includes {nested}, outside {root}, which a plan does not read")
            nested_constraint = not opts.requirement
            _read(
                joined,
                constraint=nested_constraint,
                chain=(*chain, here),
                found=found,
                count=count,
                by=source,
                root=root,
                sources=sources,
            )


def _logical_lines(text: str) -> Iterator[tuple[int, str]]:
    """pip's preprocess: join_lines, ignore_comments (no expand_env_variables: see above), each line with the number
    it starts on."""
    joined: list[str] = []
    first = 0
    lines: list[tuple[int, str]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.endswith("\\") or COMMENT.match(line):
            if COMMENT.match(line):
                line = " " + line  # so that a comment after a continuation is still one
            if joined:
                joined.append(line)
                lines.append((first, "".join(joined)))
                joined = []
            else:
                lines.append((number, line))
        else:
            if not joined:
                first = number
            joined.append(line.strip("\\"))
    if joined:
        lines.append((first, "".join(joined)))
    for number, line in lines:
        line = COMMENT.sub("", line).strip()
        if line:
            yield number, line


def _words(options: str) -> list[str]:
    """pip's shlex.split of the options; without a quote or backslash that is str.split, 30 times faster (a
    compiled file's lines are mostly --hash=sha256:...)."""
    return shlex.split(options) if any(c in options for c in "'\"\\") else options.split()


def _split(line: str) -> tuple[str, str]:
    """pip's break_args_options: the words before the first one that starts with '-', and the rest."""
    tokens = line.split(" ")
    for i, token in enumerate(tokens):
        if token.startswith("-"):
            return " ".join(tokens[:i]), " ".join(tokens[i:])
    return line, ""


def select(lines: list[Line], target: markers.Target) -> list[Declared]:
    """The lines whose marker holds for the target, each as what it declares."""
    found = []
    for line in lines:
        declared = declare(line.text, line.source, target, constraint=line.constraint, direct=line.editable)
        if declared is not None:
            found.append(declared)
    return found


def declare(
    text: str, source: Source, target: markers.Target, *, constraint: bool = False, direct: bool = False
) -> Declared | None:
    """What one requirement declares for the target (None where its marker does not hold there)."""
    if direct or SCHEME.match(text) or text.startswith((".", "/", "~")) or _is_path(text):
        separator = "; " if SCHEME.match(text) else ";"  # pip: a URL's marker follows "; ", a path's ";"
        location, _, marker = text.partition(separator)
        if marker.strip() and not markers.holds(marker.strip(), target, source):
            return None
        return _direct(location.strip(), source, constraint)
    try:
        req = Requirement(text)
        specifier = str(req.specifier)  # written in order, each version read (PEP 440)
    except InvalidRequirement as exc:
        raise PlanError(f"{source}: not a requirement pip reads ({_why(exc)})") from None
    except ValueError:  # a version number beyond the 4,300 digits Python reads as an integer
        raise PlanError(f"{source}: not a requirement pip reads (a version of thousands of digits)") from None
    if req.marker is not None and not markers.holds(str(req.marker), target, source):
        return None
    name = canonicalize_name(req.name)
    extras = frozenset(canonicalize_name(e) for e in req.extras)
    if req.url:
        return Declared(
            name, text, source, extras=extras, constraint=constraint, direct=True, version=wheel_version(req.url)
        )
    return Declared(name, text, source, specifier, extras, constraint)


def _why(exc: InvalidRequirement) -> str:
    """packaging's reason, without the line it quotes (a line of a file a plan was pointed at may be a secret)."""
    return str(exc).splitlines()[0] if str(exc) else "invalid"


def _is_path(text: str) -> bool:
    """A local path as pip takes one (a separator before any PEP 508 punctuation: `sub/pkg`, not `x @ file:/a`)."""
    head = re.split(r"[\s\[<>=!~;@]", text, maxsplit=1)[0]
    return os.sep in head or (os.altsep is not None and os.altsep in head)


def _direct(location: str, source: Source, constraint: bool) -> Declared:
    """A URL or path: the distribution its `#egg=` fragment or its wheel's file name names, if any."""
    egg = re.search(r"[#&]egg=([A-Za-z0-9._-]+)", location)
    version = wheel_version(location)
    name = canonicalize_name(egg[1]) if egg else ""
    if not name and version:
        name = canonicalize_name(_basename(location).split("-", 1)[0])  # a wheel's file name starts with its name
    return Declared(name, location, source, constraint=constraint, direct=True, version=version)


def _basename(location: str) -> str:
    """The file name a URL or path ends in, %-escapes undone (jax's index writes `+cuda12` as `%2Bcuda12`)."""
    return unquote(re.split(r"[?#]", location, maxsplit=1)[0].rstrip("/").rsplit("/", 1)[-1])


def wheel_version(location: str) -> str:
    """The version a wheel's file name states (jaxlib-0.4.20+cuda12.cudnn89-cp311-cp311-manylinux2014_x86_64.whl);
    "" for anything else (an sdist's name does not say where the version ends, a directory nothing)."""
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename  # lazily: it loads packaging.tags

    try:
        return str(parse_wheel_filename(_basename(location))[1])
    except InvalidWheelFilename:
        return ""
