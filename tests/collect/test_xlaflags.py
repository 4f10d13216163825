"""XLA_FLAGS as XLA splits it, and the flags a jaxlib defines, read from its shared object: on built files whose
layout is the real one's (an ELF64 .rodata with the flag names, XLA's parser's marks and DebugOptions' descriptor),
and on the jaxlib installed here."""

from __future__ import annotations

import os
import struct
import time
from pathlib import Path

import pytest

from envaudit.collect import xlaflags
from envaudit.model.facts import PythonFacts

MARKS = b"XLA_FLAGS\x00external/xla/xla/parse_flags_from_env.cc\x00"
TYPES = {"bool": 8, "int32": 5, "int64": 3, "string": 9}


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        out.append((value & 0x7F) | (0x80 if value > 0x7F else 0))
        value >>= 7
        if not value:
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def descriptor(fields: dict[str, str]) -> bytes:
    """A FileDescriptorProto holding DebugOptions with these fields (name -> type), as protoc serializes it."""
    body = _field(1, b"DebugOptions")
    for number, (name, kind) in enumerate(fields.items(), start=1):
        field = _field(1, name.encode()) + b"\x18" + _varint(number) + b"\x20\x01\x28" + _varint(TYPES[kind])
        body += _field(2, field)
    return _field(1, b"xla/xla.proto") + _field(4, body)


def elf(path: Path, rodata: bytes, *, section: str = ".rodata") -> Path:
    """A minimal ELF64 little-endian shared object: a null section, `section` holding `rodata`, .shstrtab."""
    names = b"\x00" + section.encode() + b"\x00.shstrtab\x00"
    rodata_at = 64
    names_at = rodata_at + len(rodata)
    headers_at = names_at + len(names)
    head = b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8)
    head += struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0, 0, headers_at, 0, 64, 0, 0, 64, 3, 2)

    def header(name: int, kind: int, offset: int, size: int) -> bytes:
        return struct.pack("<IIQQQQIIQQ", name, kind, 0, 0, offset, size, 0, 0, 1, 0)

    sections = (
        header(0, 0, 0, 0) + header(1, 1, rodata_at, len(rodata)) + header(len(section) + 2, 3, names_at, len(names))
    )
    path.write_bytes(head + rodata + names + sections)
    return path


def jaxlib(site: Path, rodata: bytes, version: str = "0.10.1") -> Path:
    """An installed jaxlib: its package with libjax_common.so, its dist-info with a RECORD listing it."""
    (site / "jaxlib").mkdir(parents=True)
    library = elf(site / "jaxlib" / "libjax_common.so", rodata)
    info = site / f"jaxlib-{version}.dist-info"
    info.mkdir()
    (info / "RECORD").write_text(f"jaxlib/__init__.py,,\njaxlib/libjax_common.so,,{library.stat().st_size}\n")
    return info


FLAGS = {"xla_cpu_enable_fast_math": "bool", "xla_force_host_platform_device_count": "int32", "xla_dump_to": "string"}
RODATA = MARKS + b"".join(n.encode() + b"\x00" for n in (*FLAGS, "xla_fuel")) + b"\x01x" + descriptor(FLAGS)


@pytest.mark.parametrize(
    ("value", "args", "rest"),
    [
        ("--xla_a=1 --xla_b", ["--xla_a=1", "--xla_b"], ""),
        ("  \t--xla_a=1\n--xla_b  ", ["--xla_a=1", "--xla_b"], ""),
        ('--xla_dump_to="/tmp/a b" --xla_b', ["--xla_dump_to=/tmp/a b", "--xla_b"], ""),
        ("--xla_x='it''s' --xla_b", ["--xla_x=it"], "'s' --xla_b"),  # after the closing quote no "-": the end
        ('--xla_x="a\\"b" --xla_y=\'a\\b\'', ['--xla_x=a"b', "--xla_y=a\\b"], ""),  # \ escapes in "..." only
        ('--xla_x="unclosed value', ["--xla_x=unclosed value"], ""),
        ("--xla_a=2 xla_foo --xla_no_such=1", ["--xla_a=2"], "xla_foo --xla_no_such=1"),  # measured: status 0
        ("-x --=1 -- --xla_a", ["-x", "--=1", "--", "--xla_a"], ""),
        ("--xla_a=x=y,z", ["--xla_a=x=y,z"], ""),
    ],
)
def test_the_value_is_split_as_parse_flags_from_env_does(value: str, args: list[str], rest: str) -> None:
    assert xlaflags.split(value) == (args, rest)


def test_the_flag_an_argument_names_and_whether_its_value_parses() -> None:
    assert [xlaflags.flag_name(a) for a in ("--xla_a=1", "--xla_a", "-xla_a", "--=1", "--", "xla_a")] == [
        "xla_a",
        "xla_a",
        "",
        "",
        "",
        "",
    ]
    bools = ["--f", "--f=true", "--f=FALSE", "--f=1", "--f=0"]  # tsl: EqualsIgnoreCase, "1", "0" (measured)
    assert [xlaflags.value_ok(a, "bool") for a in [*bools, "--f=yes", "--f=", "--f=2"]] == [True] * 5 + [False] * 3
    ints = ["--n=3", "--n=+3", "--n=-1", "--n= 7"]  # sscanf("%d%c") reads one item: blanks first are skipped
    assert [xlaflags.value_ok(a, "int32") for a in [*ints, "--n", "--n=", "--n=3x", "--n=0x10", "--n=1.5"]] == [
        True
    ] * 4 + [False] * 5
    assert xlaflags.value_ok("--s", "string") is None and xlaflags.value_ok("--n=x", "float") is None


def test_the_flags_are_read_from_the_object_that_parses_xla_flags(tmp_path: Path) -> None:
    found = xlaflags.read_object(elf(tmp_path / "libjax_common.so", RODATA))
    assert found is not None and found.sources == (str(tmp_path / "libjax_common.so"),)
    assert dict(found.flags) == {**FLAGS, "xla_fuel": ""}  # xla_fuel has no DebugOptions field: no type
    # an object without XLA's parser (another library of the package), a text file, an empty one: none
    assert xlaflags.read_object(elf(tmp_path / "_lapack.so", b"xla_cpu_enable_fast_math\x00")) is None
    (tmp_path / "notelf.so").write_bytes(b"#!/bin/sh\n" + RODATA)
    assert xlaflags.read_object(tmp_path / "notelf.so") is None
    (tmp_path / "empty.so").write_bytes(b"")
    assert xlaflags.read_object(tmp_path / "empty.so") is None
    assert xlaflags.read_object(tmp_path / "missing.so") is None


def test_a_descriptor_in_its_own_section_still_types_the_flags(tmp_path: Path) -> None:
    """jaxlib 0.10.1 keeps serialized descriptors in a section of their own (protodesc_cold)."""
    names = MARKS + b"".join(n.encode() + b"\x00" for n in FLAGS)
    path = elf(tmp_path / "lib.so", names)
    assert xlaflags.read_object(path) is not None
    assert xlaflags.field_types(b"junk" + descriptor(FLAGS) + b"junk") == FLAGS
    assert xlaflags.field_types(b"\n\x0cDebugOptions\x12\xff\xff\xff") == {}  # truncated: nothing, no exception


def test_the_answer_is_cached_under_path_size_and_mtime(tmp_path: Path) -> None:
    library = elf(tmp_path / "libjax_common.so", RODATA)
    first = xlaflags.defined_flags([library])
    assert first is not None and "xla_dump_to" in first.flags
    library.write_bytes(b"not an elf any more, same path")  # another size: read again
    assert xlaflags.defined_flags([library]) is None
    library2 = elf(tmp_path / "libjax_common.so", RODATA)
    os.utime(library2, ns=(1, 1))
    assert xlaflags.defined_flags([library2]) == first
    library2.write_bytes(b"x" * library2.stat().st_size)  # same size and mtime: the cached answer stands
    os.utime(library2, ns=(1, 1))
    assert xlaflags.defined_flags([library2]) == first


def test_each_argument_is_judged_against_the_installed_jaxlib(tmp_path: Path) -> None:
    site = tmp_path / "lib" / "python3.11" / "site-packages"
    jaxlib(site, RODATA)
    python: PythonFacts = {"prefix": str(tmp_path), "version": "3.11.9"}
    value = "--xla_cpu_enable_fast_math=yes --xla_no_such_flag=1 --xla_dump_to=/home/u/x --xla_fuel=a=1 -x"
    facts = xlaflags.get({"XLA_FLAGS": value}, python)
    assert (
        facts["status"] == "ok"
        and facts["source"] == "value"
        and facts["read_from"] == [str(site / "jaxlib" / "libjax_common.so")]
    )
    judged = [(e["shown"], e["defined"], e["kind"], e["value_ok"]) for e in facts["entries"]]
    assert judged == [
        ("--xla_cpu_enable_fast_math=<redacted>", True, "bool", False),
        ("--xla_no_such_flag=<redacted>", False, None, None),
        ("--xla_dump_to=<redacted>", True, "string", None),  # a path: hidden, as facts.env hides it
        ("--xla_fuel=<redacted>", True, None, None),
        ("<redacted>", False, None, None),
    ]
    assert facts["variable"] == (
        "--xla_cpu_enable_fast_math=<redacted> --xla_no_such_flag=<redacted> --xla_dump_to=<redacted> "
        "--xla_fuel=<redacted> <redacted>"
    )


def test_without_a_readable_jaxlib_the_names_are_unknown_but_the_shape_is_not(tmp_path: Path) -> None:
    facts = xlaflags.get({"XLA_FLAGS": "--xla_no_such_flag=1 --=1"}, {"prefix": str(tmp_path), "version": "3.11.9"})
    assert facts["status"] == "ok" and "flags_defined" not in facts and facts["message"]
    assert [e["defined"] for e in facts["entries"]] == [None, False]  # "--=1" names no flag, whatever the jaxlib


def test_a_value_not_starting_with_a_dash_is_a_file_of_flags(tmp_path: Path) -> None:
    none: PythonFacts = {"prefix": str(tmp_path), "version": "3.11.9"}
    missing = xlaflags.get({"XLA_FLAGS": "xla_foo"}, none)
    assert missing["source"] == "file" and missing["file_opens"] is False and "entries" not in missing
    assert xlaflags.get({"XLA_FLAGS": " "}, none)["file_opens"] is False  # fopen(" "): blanks only are a name too
    flags = tmp_path / "flags.txt"
    flags.write_text("--xla_no_such_flag=1\n--xla_b\n")
    read = xlaflags.get({"XLA_FLAGS": str(flags)}, none)
    assert read["source"] == "file" and read["file_opens"] is True
    assert [e["name"] for e in read["entries"]] == ["xla_no_such_flag", "xla_b"]
    assert xlaflags.get({"XLA_FLAGS": str(tmp_path)}, none)["entries"] == []  # a directory: fread reads nothing
    os.mkfifo(tmp_path / "fifo")
    started = time.monotonic()
    fifo = xlaflags.get({"XLA_FLAGS": str(tmp_path / "fifo")}, none)
    assert fifo["status"] == "unknown" and time.monotonic() - started < 5  # never opened to block on


def test_nothing_is_read_when_the_variable_is_unset_or_empty(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_: object) -> None:
        raise AssertionError("read a file")

    monkeypatch.setattr(xlaflags, "dist_info", refuse)
    assert xlaflags.get({}) == {"status": "unset", "variable": None}
    assert xlaflags.get({"XLA_FLAGS": ""}) == {"status": "unset", "variable": None}


def test_a_hung_lookup_is_unknown_in_its_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    def hung(value: str, python: object) -> dict[str, str]:
        time.sleep(5)
        return {}

    monkeypatch.setattr(xlaflags, "_collected", hung)
    started = time.monotonic()
    facts = xlaflags.get({"XLA_FLAGS": "--xla_a"}, lookup_s=0.2)
    assert facts["status"] == "unknown" and time.monotonic() - started < 2


def test_the_jaxlib_installed_here_defines_its_flags() -> None:
    """The jaxlib of the environment running the tests, where there is one (the dev venv: jaxlib 0.10.1)."""
    info = xlaflags.dist_info(xlaflags.search_path())
    if info is None:
        pytest.skip("no jaxlib installed here")
    found = xlaflags.defined_flags(xlaflags.shared_objects(xlaflags._record(info)))
    assert found is not None
    assert found.flags["xla_cpu_enable_fast_math"] == "bool"
    assert found.flags["xla_force_host_platform_device_count"] == "int32"
    assert "xla_no_such_flag" not in found.flags
