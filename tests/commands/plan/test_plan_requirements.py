"""envaudit reads a requirements file as pip does: checked against pip's own parser (pip._internal.req.req_file, the
pip the test extra installs) on the real and hand-written files of tests/fixtures/plan-inputs and on the corners of
the format (continuations, comments, `${VAR}`, options, includes, markers)."""

from __future__ import annotations

from pathlib import Path

import pytest

from envaudit.commands.plan.inputs import PlanError, markers, requirements
from tests.conftest import FIXTURES

INPUTS = FIXTURES / "plan-inputs"
LINUX_311 = markers.target("3.11")


def pips(path: Path) -> list[tuple[str, bool, bool, int, str]]:
    """pip's reading of a requirements file: each requirement as written, constraint, editable, line and file."""
    from pip._internal.network.session import PipSession
    from pip._internal.req.req_file import parse_requirements

    found = []
    for parsed in parse_requirements(str(path), session=PipSession()):
        assert parsed.line_source is not None
        number, _, file = parsed.line_source.removeprefix("line ").partition(" of ")
        found.append((parsed.requirement.strip(), parsed.constraint, parsed.is_editable, int(number), Path(file).name))
    return found


def ours(path: Path) -> list[tuple[str, bool, bool, int, str]]:
    return [
        (line.text.strip(), line.constraint, line.editable, line.source.line, Path(line.source.file).name)
        for line in requirements.load(str(path))
    ]


@pytest.mark.parametrize("name", ["nested/requirements.txt", "old-jax/requirements.txt", "jaxlib-0102/requirements.in"])
def test_the_fixtures_read_as_pip_reads_them(name: str) -> None:
    assert ours(INPUTS / name) == pips(INPUTS / name)


CORNERS = """\
# a comment line
jax==0.4.30 \\
    --hash=sha256:0000000000000000000000000000000000000000000000000000000000000000 \\
    --hash=sha256:1111111111111111111111111111111111111111111111111111111111111111
jaxlib==0.4.30  # a comment after a requirement
numpy==1.26.4
scipy @ https://example.com/scipy-1.13.1-cp311-cp311-manylinux_2_17_x86_64.whl#sha256=00ab
--extra-index-url https://${INDEX_TOKEN}@example.com/simple
--find-links ./wheels --pre
-e git+https://example.com/repo.git#egg=chex
opt-einsum==3.3.0; sys_platform == "win32"
flax==0.8.5 ; python_version >= "3.9" \\
  # a comment after a continuation ends it
-c constraints.txt
"""


def test_the_corners_of_the_format_read_as_pip_reads_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INDEX_TOKEN", "a-secret")  # an option's variable: it chooses no version, and is left as written
    (tmp_path / "requirements.txt").write_text(CORNERS)
    (tmp_path / "constraints.txt").write_text("ml-dtypes==0.4.0\n-r requirements-more.txt\n")
    (tmp_path / "requirements-more.txt").write_text("optax==0.2.2\n")
    assert ours(tmp_path / "requirements.txt") == pips(tmp_path / "requirements.txt")
    declared = {
        d.name: d for d in requirements.select(requirements.load(str(tmp_path / "requirements.txt")), LINUX_311)
    }
    assert declared["numpy"].specifier == "==1.26.4"
    assert declared["scipy"].direct and declared["scipy"].version == "1.13.1"  # `#sha256=` is no comment
    assert declared["chex"].direct and not declared["chex"].version  # named by #egg=, no version
    assert "opt-einsum" not in declared  # its marker holds on Windows only
    assert declared["flax"].specifier == "==0.8.5"
    assert declared["ml-dtypes"].constraint
    assert not declared["optax"].constraint  # pip: -r in a constraints file includes requirements, -c constraints


def test_an_include_is_relative_to_the_file_that_names_it_and_may_be_reached_twice(tmp_path: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "top.txt").write_text("-r a/one.txt\n-r a/b/two.txt\n")
    (tmp_path / "a" / "one.txt").write_text("-r b/two.txt\njax==0.4.30\n")
    (tmp_path / "a" / "b" / "two.txt").write_text("jaxlib==0.4.30\n")
    assert ours(tmp_path / "top.txt") == pips(tmp_path / "top.txt")  # a diamond is no circle, for pip either
    assert [line.source.file for line in requirements.load(str(tmp_path / "top.txt"))] == [
        str(tmp_path / "a" / "b" / "two.txt"),
        str(tmp_path / "a" / "one.txt"),
        str(tmp_path / "a" / "b" / "two.txt"),
    ]


def test_includes_are_bounded(tmp_path: Path) -> None:
    for i in range(requirements.MAX_FILES + 1):
        (tmp_path / f"{i}.txt").write_text(f"-r {i + 1}.txt\n")
    with pytest.raises(PlanError, match=f"more than {requirements.MAX_FILES}"):
        requirements.load(str(tmp_path / "0.txt"))


def test_a_file_that_includes_itself_is_refused_as_pip_refuses_it(tmp_path: Path) -> None:
    from pip._internal.exceptions import RequirementsFileParseError

    (tmp_path / "self.txt").write_text("jax==0.4.30\n-c ./self.txt\n")
    with pytest.raises(RequirementsFileParseError, match="recursively references itself"):
        pips(tmp_path / "self.txt")
    with pytest.raises(PlanError, match="recursively references itself"):
        requirements.load(str(tmp_path / "self.txt"))


@pytest.mark.parametrize("line", ["numpy==${NUMPY_VERSION}", "-r ${WHERE}/more.txt", "jax===${HF_TOKEN}"])
def test_a_variable_in_a_requirement_or_an_include_is_refused_by_its_name_never_its_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, line: str
) -> None:
    """pip expands ${VAR}; a plan's report travels, so it expands none: the line is refused, naming the variable."""
    for name in ("NUMPY_VERSION", "WHERE", "HF_TOKEN"):
        monkeypatch.setenv(name, "hf_s3cret")
    (tmp_path / "requirements.txt").write_text(f"jax==0.4.30\n{line}\n")
    with pytest.raises(PlanError) as raised:
        requirements.load(str(tmp_path / "requirements.txt"))
    said = str(raised.value)
    assert "${" in said and "hf_s3cret" not in said and "line 2" in said


def test_an_include_outside_the_files_directory_is_not_read(tmp_path: Path) -> None:
    """`-r /proc/self/environ` (or ../../etc/shadow) in a file: refused before it is opened, its content never said."""
    (tmp_path / "project").mkdir()
    (tmp_path / "secret.txt").write_text("TOKEN=hf_s3cret\n")
    for nested in ("../secret.txt", str(tmp_path / "secret.txt"), "/proc/self/environ"):
        (tmp_path / "project" / "requirements.txt").write_text(f"-r {nested}\n")
        with pytest.raises(PlanError, match="outside") as raised:
            requirements.load(str(tmp_path / "project" / "requirements.txt"))
        assert "hf_s3cret" not in str(raised.value)


def test_a_line_that_is_no_requirement_is_refused_without_its_content(tmp_path: Path) -> None:
    """A file a plan was pointed at may be a secret one: where a line is wrong is said, never what it holds."""
    (tmp_path / "environ").write_text("jax==0.4.30\nHF_TOKEN=hf_s3cret\n")
    with pytest.raises(PlanError, match="line 2: not a requirement") as raised:
        requirements.select(requirements.load(str(tmp_path / "environ")), LINUX_311)
    assert "hf_s3cret" not in str(raised.value)
