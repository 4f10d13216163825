"""XLA_FLAGS as XLA reads it, and what the installed jaxlib makes of each argument: read from jaxlib's own shared
objects, never by starting jax, so that `--quick` and the import hook see what jax would do with them.

XLA parses XLA_FLAGS once jax makes its first backend: `import jax` succeeds, `jax.devices()` ends the process with
status 1 (measured with jax and jaxlib 0.10.1 on Linux x86_64). An argument no flag takes is `Unknown flag in
XLA_FLAGS: --xla_no_such_flag=1` (LOG(QFATAL) in xla/parse_flags_from_env.cc); a value its flag cannot take is
`Couldn't interpret value yes for flag xla_cpu_enable_fast_math.` (tsl's command_line_flags.cc), then `Check failed:
tsl::Flags::Parse(...) Flag parsing failed.` and the usage of every flag; a value that does not start with "-" is
the name of a file to read the flags from (`Could not open file "xla_foo" to read flags for environment variable
"XLA_FLAGS".  (We assumed "xla_foo" was a file name because it did not start with a "--".)`).

How XLA splits the value into arguments, `ParseArgvFromString` and `SetArgvFromEnv` in
https://github.com/openxla/xla/blob/001918b7024cf5f020051a9d25d2dd57a5896aaa/xla/parse_flags_from_env.cc
(read there; jaxlib 0.10.1 is built from XLA 9b635916ecc6df6efee62d8e4b0c7ef87ef84d69, per
https://github.com/jax-ml/jax/blob/jax-v0.10.1/third_party/xla/revision.bzl, and behaves as below, measured):
- unset or empty: no flags; else if its first character that is not whitespace (" \\t\\r\\n") is not "-", the whole
  value is a file name, whose text is split the same way (a file that cannot be opened ends jax);
- an argument starts with "-" and runs over the name characters [-_A-Za-z0-9]; an "=" followed by a quote makes
  the rest up to the same quote the value, quotes removed (in "..." a backslash takes the next character as it is,
  in '...' nothing is special; an unclosed quote runs to the end); otherwise it runs to the next whitespace;
- the first argument that does not start with "-" ends the parse, silently: it and all after it are never read.
How each argument meets the flags, `Flags::Parse` in
https://github.com/openxla/xla/blob/001918b7024cf5f020051a9d25d2dd57a5896aaa/third_party/tsl/tsl/util/command_line_flags.cc:
"--NAME=VALUE" for a flag of any type, "--NAME" alone for a bool flag only (an int or string flag without "=" is an
unknown argument); a bool takes true or false (in any case, measured) or 1 or 0, an int what sscanf's "%d" reads
whole; an argument "--" makes itself and every later one unknown.

Which flags the jaxlib defines: each flag's name is a string literal handed to tsl::Flag in XLA's
debug_options_flags.cc, so it lies NUL-terminated in the .rodata section of the shared object that holds XLA's flag
parser (`jaxlib/libjax_common.so` in jaxlib 0.10.1; the one whose .rodata names XLA_FLAGS and
parse_flags_from_env): every `xla_[a-z0-9_]+\\0` there is taken for a flag. Measured against jax 0.10.1 itself, each
of the 899 distinct `xla_[a-z0-9_]+` strings anywhere in libjax_common.so tried as XLA_FLAGS=--NAME=0: 297 are flags,
and all 297 are among the 352 names this reads; the other 55 are not flags (attribute names, custom-call targets),
so an unknown argument of one of those names goes unseen. The set errs towards "defined", never towards a finding.
A flag's type is its DebugOptions field's (the message's descriptor is serialized in the same file), and only bool,
int32 and int64 are judged, by what tsl refuses in both versions read (the older takes fewer bool spellings), as
measured with jax 0.10.1 on every flag of those types: each of the 182 bool flags refused =2 and =notavalue and
took =0 (181 took the bare --NAME; xla_gpu_enable_libnvptxcompiler refuses to be true here, its own check); each of
the 50 int32 and int64 flags refused =notavalue, took =+3, and was an unknown flag as a bare --NAME. A flag without
a field (xla_fuel, ten others), a float, an enum or a list is not judged. Reading costs 0.05 to 0.08 s with the page
cache dropped (20 MiB of .rodata out of 348 MiB), 0.04 s with it warm, and 2 ms from envaudit's cache, keyed by
every shared object's path, size and modification time. What cannot be read (no jaxlib, not ELF, over the bounds,
a hung file system) is unknown (`defined: None`), never a finding.
"""

from __future__ import annotations

import csv
import hashlib
import io
import os
import re
import shlex
import stat
import struct
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from envaudit.collect.timed import within
from envaudit.files import cachedir
from envaudit.model.facts import PythonFacts, ReportError, XlaFlag, XlaFlagsFacts
from envaudit.model.redact import redact, redact_xla_flags

VARIABLE = "XLA_FLAGS"
WHITESPACE = " \t\r\n"  # kWS in parse_flags_from_env.cc
NAME_CHARACTERS = frozenset("-_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
FLAG = re.compile(rb"(xla_[a-z0-9_]+)\x00")
PARSER_MARKS = (b"XLA_FLAGS\x00", b"parse_flags_from_env")  # the object that parses XLA_FLAGS says both
DESCRIPTOR = b"\n\x0cDebugOptions\x12"  # a DescriptorProto: name (field 1, 12 bytes) "DebugOptions", then a field
# FieldDescriptorProto.Type (google/protobuf/descriptor.proto): the types whose values tsl parses as numbers or bools
FIELD_TYPES = {1: "double", 2: "float", 3: "int64", 4: "uint64", 5: "int32", 8: "bool", 9: "string", 14: "enum"}
JUDGED = frozenset({"bool", "int32", "int64"})  # measured: see the module's text
INT = re.compile(r"[ \t\n\r\f\v]*[+-]?[0-9]+")  # sscanf "%d%c" reads exactly one item: the whole value
BOOL = re.compile(r"(?i:true|false)|[01]")
MAX_SECTION = 512 << 20  # .rodata of libjax_common.so is 20 MiB; more than this is no jaxlib
MAX_RECORD = 4 << 20  # jaxlib 0.10.1's RECORD is 16 KiB
MAX_FILE = 1 << 20  # a flags file XLA would read
MAX_OBJECTS = 256  # jaxlib 0.10.1 ships 29 shared objects
LOOKUP_S = 10.0  # a hung network file system must not hold the audit
CACHE_VERSION = 1


@dataclass(frozen=True)
class Defined:
    """What a jaxlib's shared objects say of its flags: each name, with its type where DebugOptions has it."""

    flags: Mapping[str, str]  # name -> type ("bool", "int32", ...; "" where no DebugOptions field says)
    sources: tuple[str, ...]  # the shared objects they were read from


def split(value: str) -> tuple[list[str], str]:
    """The arguments XLA reads from a flags text, and the rest it never reads (from the first argument that does not
    start with "-"): ParseArgvFromString, step by step."""
    args: list[str] = []
    end = len(value)
    b = _skip(value, 0)
    while b != end and value[b] == "-":
        e = b
        while e != end and value[e] in NAME_CHARACTERS:
            e += 1
        if e != end and value[e] == "=" and e + 1 != end and value[e + 1] in "'\"":
            e += 1
            name_end, quote = e, value[e]
            e += 1
            found = []
            while e != end and value[e] != quote:
                c = value[e]
                if quote == '"' and c == "\\" and e + 1 != end:
                    e += 1
                    c = value[e]
                found.append(c)
                e += 1
            if e != end:
                e += 1  # the closing quote
            args.append(value[b:name_end] + "".join(found))
        else:
            while e != end and value[e] not in WHITESPACE:
                e += 1
            args.append(value[b:e])
        b = _skip(value, e)
    return args, value[b:]


def _skip(value: str, start: int) -> int:
    while start != len(value) and value[start] in WHITESPACE:
        start += 1
    return start


def flag_name(arg: str) -> str:
    """The flag an argument names, as tsl matches it ("--NAME" or "--NAME=..."); "" where it names none."""
    if not arg.startswith("--") or arg == "--":
        return ""
    return arg[2:].partition("=")[0]


def value_ok(arg: str, kind: str) -> bool | None:
    """Whether tsl parses the argument for a flag of this type; None for a type not judged (module's text)."""
    if kind not in JUDGED:
        return None
    _, sep, value = arg[2:].partition("=")
    if kind == "bool":
        return not sep or bool(BOOL.fullmatch(value))
    return bool(sep) and bool(INT.fullmatch(value))


def shown(arg: str) -> str:
    """An argument as a report may show it: redact.py's rule for a flags variable, applied to it alone."""
    return redact_xla_flags(shlex.quote(arg))


def entries(args: Sequence[str], defined: Defined | None) -> list[XlaFlag]:
    """Each argument XLA reads, with what the jaxlib's flags make of it (None where they could not say)."""
    found: list[XlaFlag] = []
    for arg in args:
        name = flag_name(arg)
        entry: XlaFlag = {"shown": shown(arg), "name": name, "defined": None, "kind": None, "value_ok": None}
        if not name:
            entry["defined"] = False  # "-x", "--=1", "--": no flag has such a name
        elif defined is not None:
            entry["defined"] = name in defined.flags
            kind = defined.flags.get(name) or None
            entry["kind"] = kind
            entry["value_ok"] = value_ok(arg, kind) if kind and entry["defined"] else None
        found.append(entry)
    return found


def _elf_sections(handle: io.BufferedReader, size: int) -> dict[str, tuple[int, int]]:
    """An ELF64 file's sections, name -> (offset, size); {} for anything else (a Mach-O jaxlib: unknown)."""
    head = handle.read(64)
    if len(head) < 64 or head[:4] != b"\x7fELF" or head[4] != 2 or head[5] not in (1, 2):
        return {}
    order = "<" if head[5] == 1 else ">"
    (shoff,) = struct.unpack_from(order + "Q", head, 0x28)
    entsize, count, names_index = struct.unpack_from(order + "HHH", head, 0x3A)
    if entsize < 64 or not 0 < count <= 65535 or names_index >= count or shoff + entsize * count > size:
        return {}
    handle.seek(shoff)
    table = handle.read(entsize * count)
    headers = [struct.unpack_from(order + "IIQQQQ", table, i * entsize) for i in range(count)]
    names_offset, names_size = headers[names_index][4], headers[names_index][5]
    if names_offset + names_size > size or names_size > 1 << 20:
        return {}
    handle.seek(names_offset)
    names = handle.read(names_size)
    sections = {}
    for name_at, _kind, _flags, _address, offset, length in headers:
        name = names[name_at : names.find(b"\0", name_at)].decode("ascii", "replace")
        if offset + length <= size:
            sections[name] = (offset, length)
    return sections


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if at >= len(data) or shift > 63:
            raise ValueError("truncated varint")
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, at


def _fields(message: bytes) -> Iterable[tuple[int, int | bytes]]:
    """A protobuf message's fields, (number, value): the wire format, as far as a descriptor uses it."""
    at = 0
    while at < len(message):
        key, at = _varint(message, at)
        wire = key & 7
        if wire == 0:
            value, at = _varint(message, at)
            yield key >> 3, value
        elif wire == 2:
            length, at = _varint(message, at)
            if at + length > len(message):
                raise ValueError("truncated field")
            yield key >> 3, message[at : at + length]
            at += length
        elif wire in (1, 5):
            at += 8 if wire == 1 else 4
        else:
            raise ValueError(f"wire type {wire}")


def field_types(data: bytes) -> dict[str, str]:
    """DebugOptions' fields and their types, from a serialized descriptor of it in `data` ({} where none parses)."""
    found: dict[str, str] = {}
    for match in re.finditer(re.escape(DESCRIPTOR), data):
        start = match.start()
        for back in (2, 3, 4):  # DescriptorProto is field 4 of FileDescriptorProto: tag 0x22, then its length
            if start - back < 0 or data[start - back] != 0x22:
                continue
            try:
                length, at = _varint(data, start - back + 1)
                if at != start:
                    continue
                for number, value in _fields(data[start : start + length]):
                    if number == 2 and isinstance(value, bytes):  # a FieldDescriptorProto
                        field = dict(_fields(value))
                        name, kind, label = field.get(1), field.get(5), field.get(4)
                        if isinstance(name, bytes) and isinstance(kind, int):
                            repeated = label == 3  # LABEL_REPEATED: set by a string flag, not judged
                            found[name.decode("ascii", "replace")] = "" if repeated else FIELD_TYPES.get(kind, "")
            except ValueError:
                continue
            if found:
                return found
    return found


def _open_regular(path: str | Path) -> io.BufferedReader | None:
    """A regular file opened for reading, without blocking on a FIFO or opening a device for good; None else."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    return os.fdopen(fd, "rb")


def read_object(path: Path) -> Defined | None:
    """The flags one shared object defines, or None when it holds no XLA flag parser or cannot be read."""
    try:
        opened = _open_regular(path)
        if opened is None:
            return None
        with opened as handle:
            info = os.fstat(handle.fileno())
            sections = _elf_sections(handle, info.st_size)
            offset, length = sections.get(".rodata", (0, 0))
            if not length or length > MAX_SECTION:
                return None
            handle.seek(offset)
            rodata = handle.read(length)
            if not all(mark in rodata for mark in PARSER_MARKS):
                return None
            flags = {m.decode(): "" for m in FLAG.findall(rodata)}
            types = field_types(rodata)
            for name in sorted(n for n in sections if n.startswith("protodesc")):  # protodesc_cold in jaxlib 0.10.1
                at, size = sections[name]
                if not types and 0 < size <= MAX_SECTION:
                    handle.seek(at)
                    types = field_types(handle.read(size))
    except (OSError, struct.error, ValueError):
        return None
    return Defined({name: types.get(name, "") for name in flags}, (str(path),))


def shared_objects(files: Iterable[Path]) -> list[Path]:
    """The shared objects among a distribution's files (`name.so`, `name.so.1`), at most MAX_OBJECTS."""
    found = [f for f in files if f.name.endswith(".so") or ".so." in f.name]
    return sorted(found)[:MAX_OBJECTS]


def _key(objects: Sequence[Path]) -> str | None:
    parts = []
    for path in objects:
        try:
            info = os.stat(path)
        except OSError:
            continue
        parts.append(f"{path}\0{info.st_size}\0{info.st_mtime_ns}")
    if not parts:
        return None
    return hashlib.sha256("\n".join([str(CACHE_VERSION), *parts]).encode()).hexdigest()[:24]


def _cached(name: str) -> Defined | None:
    value = cachedir.read_json(name)
    if not isinstance(value, dict):
        return None
    flags, sources = value.get("flags"), value.get("sources")
    if not isinstance(flags, dict) or not isinstance(sources, list):
        return None
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in flags.items()):
        return None
    return Defined(flags, tuple(str(s) for s in sources))


def defined_flags(objects: Sequence[Path]) -> Defined | None:
    """The flags the jaxlib of these shared objects defines (those of every object that parses XLA_FLAGS), cached
    under their paths, sizes and modification times; None when none of them holds XLA's flag parser."""
    key = _key(objects)
    if key is None:
        return None
    name = f"xlaflags-{key}.json"
    cached = _cached(name)
    if cached is not None:
        return cached if cached.sources else None
    found = [d for d in map(read_object, objects) if d is not None]
    flags: dict[str, str] = {}
    for one in found:
        flags |= {n: k for n, k in one.flags.items() if k or n not in flags}
    result = Defined(dict(sorted(flags.items())), tuple(s for d in found for s in d.sources))
    cachedir.write_json(name, {"flags": dict(result.flags), "sources": list(result.sources)})
    return result if result.sources else None


def _record(dist_info: Path) -> list[Path]:
    """The files a distribution's RECORD lists, resolved against its site directory."""
    from envaudit.files.reportfile import read_bounded

    try:
        text = read_bounded(dist_info / "RECORD", MAX_RECORD, "a RECORD file").decode("utf-8", "replace")
    except ReportError:
        return []
    site = dist_info.parent
    return [site / row[0] for row in csv.reader(io.StringIO(text)) if row and row[0] and not row[0].startswith("..")]


def dist_info(entries: Iterable[str], name: str = "jaxlib") -> Path | None:
    """The first `<name>-<version>.dist-info` on these sys.path entries, as import would find the package."""
    for entry in entries:
        try:
            for found in sorted(Path(entry or ".").glob(f"{name}-*.dist-info")):
                if (found / "RECORD").is_file():
                    return found
        except OSError:
            continue
    return None


def search_path(python: PythonFacts | None = None) -> list[str]:
    """Where the audited interpreter finds jaxlib: this one's sys.path, or for another one (--python) what its
    facts say of it (PYTHONPATH, its user site, its prefix's site-packages; another layout is unknown)."""
    if python is None:
        return list(sys.path)
    found = [e for e in str(python.get("pythonpath") or "").split(os.pathsep) if e]
    found += [str(python["user_site"])] if python.get("user_site") else []
    prefix, version = str(python.get("prefix") or ""), str(python.get("version") or "")
    short = ".".join(version.split(".")[:2])
    if prefix and short:
        found += [
            os.path.join(prefix, "lib", f"python{short}", "site-packages"),
            os.path.join(prefix, "Lib", "site-packages"),
            os.path.join(prefix, "lib", "python3", "dist-packages"),
        ]
    return found


def flags_file(value: str) -> bool:
    """Whether XLA takes the value for the name of a file of flags: its first non-blank character is not "-"."""
    return value.lstrip(WHITESPACE)[:1] != "-"


def read_flags_file(name: str) -> tuple[str | None, bool | None]:
    """The text of the file XLA would read its flags from, and whether XLA can open it: (text, True); (None,
    False) where fopen() fails (no such file, no permission), which ends jax; (None, None) where envaudit cannot
    say (a FIFO or a device, which XLA would block on or read, and envaudit does neither)."""
    try:
        info = os.stat(name)
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return None, False
    except (OSError, ValueError):  # ValueError: a NUL in the name (no environment value has one)
        return None, None
    if stat.S_ISDIR(info.st_mode):
        return "", True  # fopen() of a directory succeeds and fread() reads nothing: no flags
    try:
        opened = _open_regular(name)
        if opened is None:
            return None, None
        with opened as handle:
            return handle.read(MAX_FILE).decode("utf-8", "replace"), True
    except PermissionError:
        return None, False
    except OSError:
        return None, None


def get(
    environ: Mapping[str, str] | None = None,
    python: PythonFacts | None = None,
    *,
    lookup_s: float = LOOKUP_S,
) -> XlaFlagsFacts:
    """XLA_FLAGS of the audited environment (`environ`, os.environ by default) as XLA reads it, each argument
    judged against the installed jaxlib's flags (`python`: the audited interpreter's facts, for --python); never
    raises, and never reads a file when the variable is unset."""
    value = (os.environ if environ is None else environ).get(VARIABLE, "")
    if not value:
        return {"status": "unset", "variable": None}
    variable = redact(VARIABLE, value)
    answer = within(lookup_s, lambda: _collect(value, python), "envaudit-xlaflags")
    if answer is None:
        return {"status": "unknown", "variable": variable, "message": f"no answer within {lookup_s:g} s"}
    return {**answer, "variable": variable}


def _collect(value: str, python: PythonFacts | None) -> XlaFlagsFacts:
    try:
        return _collected(value, python)
    except Exception as exc:  # a collector never raises: what could not be read is unknown
        return {"status": "unknown", "message": f"{type(exc).__name__}: {exc}"[:200]}


def _collected(value: str, python: PythonFacts | None) -> XlaFlagsFacts:
    facts: XlaFlagsFacts = {"status": "ok", "source": "value"}
    text = value
    if flags_file(value):
        read, opens = read_flags_file(value)
        facts.update({"source": "file", "file_opens": opens})
        if read is None:
            if opens is None:
                facts.update({"status": "unknown", "message": "XLA_FLAGS names a file envaudit does not read"})
            return facts
        text = read
    args, rest = split(text)
    info = dist_info(search_path(python))
    defined = defined_flags(shared_objects(_record(info))) if info is not None else None
    facts["entries"] = entries(args, defined)
    facts["ignored"] = len(rest.split())
    if defined is None:
        facts["message"] = "no shared object of jaxlib holding XLA's flag parser could be read"
    else:
        facts["flags_defined"] = len(defined.flags)
        facts["read_from"] = list(defined.sources)
    return facts
