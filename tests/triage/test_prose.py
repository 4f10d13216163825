"""The forms reporters write versions in, read by one reader (envaudit/commands/triage/extract.py), each seen in
real bug reports: lists, parentheses, pipdeptree, issue templates' bare answers, conda's `python=`, sys.version
strings, uv's interpreter names, CI runners' tool caches; and a version after a verb of change in a sentence that
says it helps is a way out, not what is installed."""

from __future__ import annotations

import json

import pytest

from envaudit.commands.triage import extract


def read(*lines: str) -> set[tuple[str, str]]:
    return {(s.fact, str(s.value)) for s in extract.seen(list(lines))}


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        (["jax - 0.4.28", "jaxlib - 0.4.28"], {("package jax", "0.4.28"), ("package jaxlib", "0.4.28")}),
        (["The jax version used (0.4.28) is the latest"], {("package jax", "0.4.28")}),
        (["jax varsion: 0.4.30"], {("package jax", "0.4.30")}),
        (["├── jax [required: >=0.5.0, installed: 0.5.3]"], {("package jax", "0.5.3")}),
        (
            ["### What jax/jaxlib version are you using?", "", "0.4.23 0.4.23"],
            {("package jax", "0.4.23"), ("package jaxlib", "0.4.23")},
        ),
        (
            ["### System info (python version, jaxlib version, accelerator, etc.)", "0.4.31"],
            {("package jax", "0.4.31"), ("package jaxlib", "0.4.31")},
        ),
        (["conda create --name test python=3.10.11 --yes"], {("python", "3.10.11")}),
        (["conda create -n gpax python==3.10"], {("python", "3.10")}),
        (["3.10.12 (main, Jun 11 2023, 05:26:28) [GCC 11.4.0]"], {("python", "3.10.12")}),
        (
            ["Using CPython 3.12.9 interpreter at: cpython-3.12.9-macos-aarch64-none"],
            {("python", "3.12.9"), ("system", "Darwin"), ("machine", "aarch64")},
        ),
        (
            ['  File "/opt/hostedtoolcache/Python/3.9.18/x64/lib/python3.9/site-packages/jax/x.py"'],
            {("python", "3.9.18")},
        ),
        (["$ python3.11 -m pip install -U jax"], {("python", "3.11")}),  # the interpreter's command
        (["conda activate py3.10"], {("python", "3.10")}),
        # a library around jax in prose: any on the derived list, not a hand-kept few
        (["with dynamax 0.1.4 and tensorflow-probability 0.24.0"], {("package dynamax", "0.1.4")}),
        # the same sentence: a bare version after "in" is the package it named, at another release
        (
            ["It fails with jax 0.4.20 and still fails in 0.5.1."],
            {("package jax", "0.4.20"), ("package jax", "0.5.1")},
        ),
        # an installer's list states any distribution: a pair with a library needs mpi4py's or typeguard's version
        (
            ["Package    Version", "---------- -------", "jax        0.4.30", "mpi4py     3.1.4", "typeguard  4.1.0"],
            {("package mpi4py", "3.1.4"), ("package typeguard", "4.1.0")},
        ),
        (["typeguard==2.13.3", "jaxtyping==0.2.19"], {("package typeguard", "2.13.3")}),
        (["pennylane - 0.35.1"], {("package pennylane", "0.35.1")}),
        # names joined by "&", "and" or "/" share the version after the last
        (["It fails with jax/jaxlib 0.4.30"], {("package jax", "0.4.30"), ("package jaxlib", "0.4.30")}),
        (["I have jax and jaxlib 0.4.24 here"], {("package jax", "0.4.24"), ("package jaxlib", "0.4.24")}),
        # a system named as what something is for is not the reporter's (tests/fixtures/triage-unseen-5 case 08)
        (["the wheels are all for linux, but I'm trying to run on windows(bash)"], {("system", "Windows")}),
    ],
)
def test_a_version_in_each_form_is_read(lines: list[str], expected: set[tuple[str, str]]) -> None:
    assert expected <= read(*lines), read(*lines)


@pytest.mark.parametrize(
    "line",
    [
        "Can be solved by downgrading Flax to 0.6.4",
        "pinning optax==0.1.7 fixes it",
        "It works after I upgraded jax to 0.4.30",
        "Reverting to jaxlib 0.4.23 resolved the crash",
        "Downgrading jax & jaxlib to 0.4.23 solves the issue.",  # tests/fixtures/triage-unseen-5 case 02
    ],
)
def test_a_change_the_text_says_helps_is_no_installed_version(line: str) -> None:
    assert not {f for f, _ in read(line) if f.startswith("package")}, read(line)
    assert {f for f, _ in read(line) if f.startswith("helps ")}, read(line)  # kept, as a way out
    if "jax & jaxlib" in line:
        assert {"helps jax", "helps jaxlib"} <= {f for f, _ in read(line)}


@pytest.mark.parametrize(
    "lines",
    [
        ["Ubuntu 22.04"],  # a line of a name and a version outside an installer's list: an OS, not a package
        ["gcc 11.4.0"],
        ["requests 2.31.0"],  # prose naming a distribution envaudit does not know: not read as installed
        ["jax 0.4.20 crashes; it was fixed in 0.5.1"],  # a release the text names
    ],
)
def test_what_no_installer_listed_is_not_read_as_an_unknown_package(lines: list[str]) -> None:
    found = read(*lines)
    assert not {f for f, _ in found if f.startswith("package") and f != "package jax"}, found
    assert ("package jax", "0.5.1") not in found


def test_a_way_out_is_replied_as_one_and_never_asked_about() -> None:
    """ "Can be solved by downgrading Flax to 0.6.4" was read as flax 0.6.4 installed, then not at all and asked
    about as a version without a name: it is a release the text says helps, stated apart from the environment."""
    from envaudit.commands.triage import reply
    from envaudit.commands.triage.triaged import triage

    result = triage(b"jax 0.4.30\njaxlib 0.4.30\nCan be solved by downgrading Flax to 0.6.4\n")
    assert "flax" not in result.environments[0].report.facts.packages and not result.unnamed
    assert "a way out, not what is installed): `flax==0.6.4` (line 3)." in reply.markdown(result)
    assert "flax 0.6.4  line 3" in reply.text(result)


def test_a_long_list_is_read_whole_and_the_reply_counts_what_it_does_not_list() -> None:
    """Every package of a pasted `pip list` is a fact (the pairs between libraries need them); the reply lists
    those envaudit knows or a finding names, and counts the rest."""
    from envaudit.commands.triage import reply
    from envaudit.commands.triage.triaged import triage

    others = [f"pkg-{i}    1.{i}.0" for i in range(40)]
    text = "\n".join(["Package    Version", "---------- -------", "jax        0.4.30", "jaxlib     0.4.20", *others])
    result = triage(text.encode())
    packages = result.environments[0].report.facts.packages
    assert packages["pkg-39"] == "1.39.0" and packages["jaxlib"] == "0.4.20"
    said = reply.text(result)
    assert "and 40 other packages (lines 5-44)" in said and "pkg-3" not in said
    assert "| 40 other packages | | lines 5-44 |" in reply.markdown(result)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("After upgrading jax to 0.4.30 I get this error", ("package jax", "0.4.30")),
        ("I upgraded jax to 0.4.30 and it still doesn't work", ("package jax", "0.4.30")),
        ("pip install jax==0.4.30 jaxlib==0.4.30", ("package jaxlib", "0.4.30")),
        ("Updating jax (0.4.23 -> 0.4.30)", None),  # poetry's move: no environment of its own
    ],
)
def test_a_change_that_did_not_help_is_what_is_installed(line: str, expected: tuple[str, str] | None) -> None:
    found = read(line)
    assert (expected in found) if expected else not {f for f, _ in found if f.startswith("package")}, found


def test_versions_without_names_are_asked_about_not_refused() -> None:
    """A text that states versions but no package names (and no error a rule reads) was exit 2, "no
    environment": a maintainer asks which packages they are. Versions inside a URL or a path are not asked about."""
    import json

    from envaudit.commands.triage import reply
    from envaudit.commands.triage.triaged import triage

    text = b"My code crashes with version 0.4.30 on 12.2\nsee https://example.com/v/1.2.3 and /opt/x/3.4.5/bin\n"
    result = triage(text)
    assert [s.value for s in result.unnamed] == ["0.4.30", "12.2"]
    assert "Which packages are `0.4.30` (line 1), `12.2` (line 1)?" in reply.markdown(result)
    assert json.loads(json.dumps(result.to_dict()))["unnamed"][0]["value"] == "0.4.30"
    assert not triage(b"jax==0.4.30 crashes with 12.2 threads\n").unnamed  # a name was found: nothing to ask


def test_a_finding_with_no_command_says_what_to_do_in_every_reply() -> None:
    """Issue 54: every Markdown finding printed `Fix: ` and an empty code span where its rule has no command (what
    to do was only in the detail, which the reply leaves out)."""
    from envaudit.commands.triage import reply
    from envaudit.commands.triage.triaged import triage

    text = b"jax==0.7.0\nAttributeError: jax.interpreters.xla.pytype_aval_mappings was removed in JAX v0.7.0.\n"
    result = triage(text)
    said = reply.markdown(result)
    assert "Fix: ` `" not in said and "Fix: ``" not in said
    assert all(" Fix: " in line for line in said.splitlines() if line.startswith("- **"))
    assert "no command fixes this; what to do:" in said + reply.text(result)
    written = json.loads(reply.RENDERERS.render(result, "json"))["environments"][0]["findings"]
    assert all(f["fix"] or f["todo"].startswith("no command fixes this; what to do:") for f in written), written
