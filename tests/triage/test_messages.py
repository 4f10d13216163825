"""Triage reads what a maintainer reads first: the messages jax, XLA and NumPy print (their facts, and the rule
they name), versions written in prose, stated minimums (requirements, not environments), and envaudit's own
reports as the audited facts they carry."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from envaudit.commands.triage import extract, reply
from envaudit.commands.triage.triaged import TriageError, triage
from envaudit.formats import FORMATS
from envaudit.judge import assemble
from envaudit.model.facts import Facts


def facts(result: object, number: int = 0) -> dict[str, str]:
    env = result.environments[number]  # type: ignore[attr-defined]
    return {s.fact: s.value for s in env.seen}


def roots(result: object) -> set[str]:
    return {f.id for e in result.environments for f in e.report.findings if not f.caused_by}  # type: ignore[attr-defined]


def test_an_error_and_no_versions_is_answered_with_its_cause_its_facts_and_what_to_state() -> None:
    text = (
        b"Traceback (most recent call last):\n  ...\n"
        b"RuntimeError: jaxlib is version 0.4.1, but this version of jax requires version >= 0.4.6.\n"
    )
    result = triage(text)
    assert result.verdict == "fail" and "jax-jaxlib-coupling" in roots(result)
    assert facts(result) == {"package jaxlib": "0.4.1"}
    assert result.environments[0].seen[0].line == 3
    assert "the jax version (pip show jax)" in result.environments[0].missing
    finding = next(f for f in result.environments[0].report.findings if f.id == "jax-jaxlib-coupling")
    assert "line 3: 'jaxlib is version 0.4.1, but this version of jax requires version >= 0.4.6.'" in finding.detail


def test_a_message_wrapped_by_the_reporters_terminal_still_names_its_rule_and_facts() -> None:
    text = (
        b"/site-packages/jaxlib/plugin_support.py:71: RuntimeWarning: JAX plugin jax_cuda12_plugin version 0.6.2 is\n"
        b"installed, but it is not compatible with the installed jaxlib version 0.6.1, so it will not be used.\n"
    )
    result = triage(text)
    assert "plugin-jaxlib-mismatch" in roots(result)
    assert facts(result) == {"package jax-cuda12-plugin": "0.6.2", "package jaxlib": "0.6.1"}


def test_versions_in_prose_and_downstream_packages_are_read() -> None:
    text = b"After bumping JAX to 0.4.32 it gives wrong results; I also upgraded to optax 0.2.3 and equinox 0.10.4.\n"
    assert facts(triage(text)) == {"package jax": "0.4.32", "package optax": "0.2.3", "package equinox": "0.10.4"}


@pytest.mark.parametrize("said", ["jax[cuda12] 0.11.1", "jax[cuda12]==0.11.1"])
def test_jax_with_an_extra_states_what_pip_installs_with_it(said: str) -> None:
    """jax#40487's title: the extra names the plugin jax runs on, a Jetson its GPU, and the build has no code for
    it (the check derived from the plugin's wheel)."""
    text = f"no kernel image on Jetson Orin (sm_87) with {said} aarch64 wheels\n".encode()
    result = triage(text)
    stated = facts(result)
    assert (
        stated["package jax-cuda12-plugin"] == stated["package jaxlib"] == "0.11.1" and stated["gpu"] == "Jetson Orin"
    )
    assert "gpu-architecture-not-in-jax-build" in roots(result)
    assert "package jax-cuda12-plugin" not in facts(triage(b"no kernel image on Jetson Orin with jax 0.11.1\n"))


def test_printed_numbers_are_not_versions_and_the_templates_answer_is() -> None:
    """A program's output ("scipy: 7.6e-24", "jax: 0.0") states no version; the answer under jax's issue template
    question is jax's (and jaxlib's) version, and a version in parentheses after a name is that name's."""
    printed = b"print('scipy:', stats.norm.sf(value))\n```\nscipy: 7.61985302416047e-24\njax: 0.0\n```\n"
    assert not {k for k in facts(triage(printed + b"import jax\n")) if k.startswith("package")}
    template = b"import jax\n### What jax/jaxlib version are you using?\n\n0.4.20/0.4.19\n"
    assert facts(triage(template)) == {"package jax": "0.4.20", "package jaxlib": "0.4.19"}
    assert facts(triage(b"the newest version of jax (0.3.7) removed some classes\n")) == {"package jax": "0.3.7"}
    poetry = b"import jax\n  - Updating jax (0.4.23 -> 0.4.30)\n  - Updating jaxlib (0.4.23 -> 0.4.30)\n"
    assert len(triage(poetry).environments) == 1 and not facts(triage(poetry))  # an installer's move: no environment
    labelled = b"import jax\n### What jax/jaxlib version are you using?\n0.4.26+cuda12.cudnn89\n"
    assert facts(triage(labelled)) == {
        "package jax": "0.4.26",
        "package jaxlib": "0.4.26+cuda12.cudnn89",
        "platform": "cuda",
    }


def test_the_plugins_own_error_alone_does_not_fail_a_report() -> None:
    """ "Unable to load {name}. Is it installed?" says jax is on the CPU, not why: without a driver the plugin says
    "Unable to load CUDA" too, so a report that quotes it alone is not a failure (a live audit, which knows the GPU
    and the environment, is: tests/rules/test_cuda_backend_failed.py). Its rule's signature only states facts, so
    the error stays one no finding explains: quoted, as a warning."""
    fallback = (
        b"WARNING: An NVIDIA GPU may be present on this machine, but a CUDA-enabled jaxlib is not installed. "
        b"Falling back to cpu.\n"
    )
    result = triage(b"RuntimeError: Unable to load cuSPARSE. Is it installed?\n" + fallback)
    assert roots(result) == {"gpu-present-jax-on-cpu", "unexplained-error"} and result.verdict == "warn"
    assert triage(b"import jax\nRuntimeError: Unable to load CUDA. Is it installed?\n").verdict != "fail"


@pytest.mark.parametrize("minimum", ["Jax 0.4.4+", "jax>=0.4.4", "jax 0.4.4 or newer", "jax at least 0.4.4"])
def test_a_stated_minimum_is_a_requirement_not_a_second_environment(minimum: str) -> None:
    text = f"The README says {minimum} is enough, but with jax 0.4.6 and equinox 0.10.4 it fails.\n".encode()
    result = triage(text)
    assert len(result.environments) == 1 and facts(result)["package jax"] == "0.4.6"
    assert [(s.fact, s.value) for s in result.requirements] == [("requires jax", ">=0.4.4")]
    assert "Requirements the text states" in reply.RENDERERS.render(result, "text")
    assert json.loads(reply.RENDERERS.render(result, "json"))["requirements"][0]["value"] == ">=0.4.4"


def test_jax_code_without_versions_is_answered_and_text_about_nothing_is_refused() -> None:
    result = triage(b"import jax.numpy as jnp\nprint(jnp.float16(1) @ jnp.float16(2))  # hangs\n")
    assert result.verdict == "ok" and facts(result) == {}
    assert "the jax version (pip show jax)" in result.environments[0].missing
    with pytest.raises(TriageError, match="no environment in this text"):
        triage(b"The weather was fine and the build finished.\n")


@pytest.mark.parametrize(
    "text",
    [
        b"Jax is slower than Numpy on CPU\nNumpy took 523 ms while Jax took 847 ms.\n",
        b"Backend Doesn't Change to JAX\nos.environ['KERAS_BACKEND'] = 'jax' still shows tensorflow\n",
        b"optax's schedule gives nan after 1000 steps\n",  # a library on jax, named as a word
    ],
)
def test_a_report_about_jax_that_states_no_version_is_answered_not_refused(text: bytes) -> None:
    """A question about jax in prose (a timing, a backend set after import) is a report: refusing it with exit 2
    ("no environment") answered three healthy reports of the unseen set with nothing; the answer is what to state."""
    result = triage(text)
    assert result.verdict == "ok" and "the jax version (pip show jax)" in result.environments[0].missing


def test_quoted_lines_are_read_as_the_lines_they_quote() -> None:
    """A reply or an email quotes a log with "> " marks: its versions and messages are the same facts."""
    text = b"> jax-cuda12-pjrt 0.4.28\n> > jax 0.4.28\n> jaxlib 0.4.20\n"
    assert facts(triage(text)) == {
        "package jax": "0.4.28",
        "package jax-cuda12-pjrt": "0.4.28",
        "package jaxlib": "0.4.20",
    }
    assert "jax-jaxlib-coupling" in roots(triage(text))


def test_a_message_that_only_states_facts_gives_them_and_fires_nothing() -> None:
    result = triage(
        b"WARNING:absl:No GPU/TPU found, falling back to CPU. (Set TF_CPP_MIN_LOG_LEVEL=0 and rerun for more info.)\n"
    )
    assert facts(result) == {"platform": "cpu"} and result.verdict == "ok"


@pytest.mark.slow  # a second of reading: a long log, as it is bounded
def test_a_log_that_repeats_a_message_is_one_message_judged_once() -> None:
    line = (
        b"E cuda_dnn.cc:523] Loaded runtime CuDNN library: 9.0.0 but source was compiled with: 9.1.1.  CuDNN library "
        b"needs to have matching major version and equal or higher minor version.\n"
    )
    result = triage(line * 5000)
    assert len(result.environments) == 1
    assert len(result.environments[0].report.facts.messages) == 1


BROKEN = Facts(
    packages={"jax": "0.4.30", "jaxlib": "0.4.25", "numpy": "1.26.4", "scipy": "1.13.1"},
    python={"version": "3.11.9", "executable": "/venv/bin/python"},
    platform={"system": "Linux", "machine": "x86_64"},
)


@pytest.mark.parametrize("form", ["text", "markdown", "json"])
def test_envaudits_own_report_is_read_as_its_facts_not_its_fixes(form: str) -> None:
    report = assemble.assemble(BROKEN, mode="audit", host_info={"hostname": "node"})
    assert report.verdict == "fail" and any(f.fix for f in report.findings)  # its fix names other versions
    result = triage(("Here is what envaudit said:\n\n" + FORMATS.render(report, form)).encode())
    assert len(result.environments) == 1 and result.verdict == "fail"
    read = {k.removeprefix("package "): v for k, v in facts(result).items() if k.startswith("package ")}
    assert read == BROKEN.packages
    assert facts(result)["python"] == "3.11.9"
    assert "jax-jaxlib-coupling" in roots(result)


@pytest.mark.parametrize(
    "text", [b"AttributeError: _ARRAY_API not found\n", b"jax 0.4.4+ is required\n", b"import jax\nx = 1\n"]
)
@pytest.mark.parametrize("form", ["text", "markdown", "json"])
def test_a_text_that_states_no_version_is_rendered_in_every_format(text: bytes, form: str) -> None:
    rendered = reply.RENDERERS.render(triage(text), form)
    assert rendered.strip() and ("no versions stated" in rendered or form == "json" or b"_ARRAY" in text)


def test_a_report_is_looked_for_once_however_many_lines_look_like_one(monkeypatch: pytest.MonkeyPatch) -> None:
    from envaudit.commands.triage import own

    tried: list[int] = []
    parse = own._json

    def counted(lines: list[str], start: int) -> object:
        tried.append(start)
        return parse(lines, start)

    monkeypatch.setattr(own, "_json", counted)
    assert own.read(['"schema": "envaudit/report/v1"'] * 100_000) is None and len(tried) == 1


def test_a_quoted_report_header_without_its_facts_leaves_the_text_read_as_any_other() -> None:
    text = b"It said:\nenvaudit 0.1.0 | node01 | 2026 | audit | verdict: FAIL\nthen jax 0.4.30, jaxlib 0.4.20 crashed\n"
    result = triage(text)
    assert facts(result) == {"package jax": "0.4.30", "package jaxlib": "0.4.20"}
    assert "jax-jaxlib-coupling" in roots(result)


def test_a_markdown_report_cut_in_its_json_is_read_from_its_table_not_its_fix_commands() -> None:
    report = assemble.assemble(BROKEN, mode="audit", host_info={"hostname": "node"})
    markdown = FORMATS.render(report, "markdown")
    cut = markdown[: markdown.index('"facts"')]
    result = triage(cut.encode())
    read = {k.removeprefix("package "): v for k, v in facts(result).items() if k.startswith("package ")}
    assert read == BROKEN.packages


def test_a_message_longer_than_its_quote_still_fires_its_rule() -> None:
    said = "Unable to initialize backend 'cuda': INTERNAL: no supported devices found for platform CUDA; "
    advice = "(set JAX_PLATFORMS='' to automatically choose an available backend)"
    text = f"import jax\nRuntimeError: {said}{'x' * 400} {advice}\n"
    assert "jax-platforms-unavailable" in roots(triage(text.encode()))


def test_a_message_only_rule_keeps_its_fix_when_another_steps_runs_first() -> None:
    text = (
        b"flax==0.7.2\njax==0.4.30\njaxlib==0.4.30\nnumpy==2.0.0\n\n\n\n"
        b"A module that was compiled using NumPy 1.x cannot be run in NumPy 2.0.0 as it may crash.\n"
    )
    plan = triage(text).environments[0].report.plan
    assert "'numpy<2'" in plan.fix.command and "flax" in plan.fix.command and not plan.loop


@pytest.mark.parametrize(
    ("text", "environments", "required"),
    [
        (b"AttributeError: jax.interpreters.xla.xe was removed in JAX v0.4.36. Use jax.lib.xla_extension.", [{}], []),
        (b"Upgrading from jax 0.4.23 to 0.4.25 broke it", [{"package jax": "0.4.23"}, {"package jax": "0.4.25"}], []),
        (b"jax 0.4.30 and 0.4.31 both fail", [{"package jax": "0.4.30"}, {"package jax": "0.4.31"}], []),
        (b"equinox 0.10.4 requires jax: 0.4.13", [{"package equinox": "0.10.4"}], [("requires jax", "0.4.13")]),
        (b"with jax 0.4.30.Then it fails", [{"package jax": "0.4.30"}], []),
        (b"import jax\njax.device_put(t4, jax.devices('gpu')[0])", [{}], []),
        (
            b"jaxlib 0.1.69+cuda101\nRuntimeError: jaxlib is version 0.1.69, but",
            [{"package jaxlib": "0.1.69+cuda101", "platform": "cuda"}],
            [],
        ),
    ],
)
def test_prose_reads_the_installed_versions_only(
    text: bytes, environments: list[dict[str, str]], required: list[tuple[str, str]]
) -> None:
    result = triage(text)
    assert [facts(result, n) for n in range(len(result.environments))] == environments
    assert [(s.fact, s.value) for s in result.requirements] == required


def test_a_report_with_more_facts_than_are_read_is_read_up_to_the_bound_and_says_where() -> None:
    from envaudit.commands.triage import extract

    many = replace(BROKEN, packages={**BROKEN.packages, **{f"lib{i:05d}": f"1.{i}" for i in range(3000)}})
    report = assemble.assemble(many, mode="audit", host_info={"hostname": "node"})
    result = triage(FORMATS.render(report, "json").encode())
    assert result.unread == extract.Unread(1, "facts", extract.MAX_FACTS)
    assert len(result.environments[0].seen) == extract.MAX_FACTS
    assert facts(result)["python"] == "3.11.9" and facts(result)["package jax"] == "0.4.30"


def test_a_terminals_hard_wrap_is_undone_and_every_other_line_keeps_its_number() -> None:
    """A log pasted from a terminal 152 columns wide cuts XLA's warning inside the driver's version ("11." then
    "0 which is older..."; localcolabfold#126's paste, tests/fixtures/triage-unseen-2 case 13): read as one line, the
    warning is its rule's, at the line it starts on; nvidia-smi's rows, as wide as each other, stay rows."""
    head = (
        "2022-12-16 18:31:30.311235: W external/org_tensorflow/tensorflow/compiler/xla/service/gpu/nvptx_compiler.cc"
        ":497] The NVIDIA driver's CUDA version is 11."
    )
    rest = (
        "0 which is older than the ptxas CUDA version (11.6.124). Because the driver is older than the ptxas version,"
        " XLA is disabling parallel compilation, whic"
    )
    tail = "h may slow down compilation. You should update your NVIDIA driver."
    width = 152  # the wrap: every line but the last exactly this wide, cut wherever the width falls
    full = head + rest + tail
    lines = [full[i : i + width] for i in range(0, len(full), width)]
    pasted = "Getting this warning:\n" + "\n".join(lines) + "\nThe end.\n"
    read, _ = extract.lines(pasted.encode())
    assert read[1] == full and read[2 : len(lines) + 1] == [""] * (len(lines) - 1) and read[-1] == "The end."
    result = triage(pasted.encode())
    found = {f.id: f for e in result.environments for f in e.report.findings}
    assert result.verdict == "warn" and "driver-older-than-ptx-compiler" in found
    smi = "|" + "=" * 100 + "|\n| 0  Tesla V100-SXM2-16GB" + " " * 78 + "|\n"
    assert extract.lines(smi.encode())[0] == smi.splitlines()


def test_a_column_aligned_table_as_wide_as_a_terminal_is_not_a_wrap() -> None:
    """`pip list -v` pads its rows to one width (its Location column): rows that end in a word and start with a name
    are still rows, not prose a terminal cut; their versions are read."""
    path = "/home/researcher/miniconda3/envs/jax-gpu/lib/python3.11/site-packages"
    rows = [f"{name:<22} {version:<9} {path} pip" for name, version in (("jax", "0.4.30"), ("jaxlib", "0.4.23"))]
    assert len({len(r) for r in rows}) == 1 and len(rows[0]) >= extract.WRAP_WIDTH
    read, _ = extract.lines(("Package Version Location Installer\n" + "\n".join(rows) + "\n").encode())
    assert read[1:3] == rows
    found = {f.id for e in triage("\n".join(rows).encode()).environments for f in e.report.findings}
    assert "jax-jaxlib-coupling" in found


@pytest.mark.parametrize(
    "prefix",
    ["2024-09-19 12:00:01,123 - jax._src.xla_bridge - INFO - ", "[2024-09-19 12:00:01] INFO "],
)
def test_a_backend_jax_logged_at_info_in_loggings_formats_fails_nothing(prefix: str) -> None:
    line = prefix + "Unable to initialize backend 'tpu': INTERNAL: Failed to open libtpu.so"
    assert extract.LOG_INFO.match(line) is not None
    assert triage(f"jax 0.4.30, jaxlib 0.4.30, CPU only\n{line}\n".encode()).verdict != "fail"
