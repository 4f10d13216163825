"""The Markdown report is for pasting in a public bug report: jax's own environment block verbatim, each fix a block
of its own to copy, and no host name, home directory or environment path unless `--show-host`."""

from __future__ import annotations

import json
from dataclasses import replace

from envaudit.formats import markdown
from envaudit.formats.style import Style
from envaudit.model.facts import Facts
from envaudit.model.report import Report
from tests.conftest import sample_report

PREFIX = "/home/alice/projects/venv"
INFO = (
    "jax:    0.4.25\njaxlib: 0.4.25\nnumpy:  1.26.4\n"
    "platform: uname_result(system='Linux', node='gpu-node-17.corp.example', release='6.1.0')\n"
    "JAX_PLATFORMS=cuda\n\n$ nvidia-smi\n| NVIDIA-SMI 580.65.06 |"
)


def report() -> Report:
    base = sample_report()
    data = base.facts.to_dict()
    data["python"] = {**data["python"], "prefix": PREFIX, "executable": f"{PREFIX}/bin/python"}
    data["jax"] = {**data["jax"], "environment_info": INFO}
    data["env"] = {"XLA_FLAGS": "--xla_dump_to=/home/alice/dumps"}
    facts = Facts.from_dict(data)
    return replace(base, facts=facts, host={"hostname": "gpu-node-17.corp.example"})


def test_nothing_that_names_the_machine_or_its_user_is_shared() -> None:
    md = markdown.render(report())
    assert "gpu-node-17" not in md and "alice" not in md and PREFIX not in md
    assert "node='<host>'" in md and "<env>/bin/python" in md and "--xla_dump_to=~/dumps" in md
    document = json.loads(md.split("```json\n", 1)[1].split("\n```", 1)[0])
    assert document["host"] == {} and document["facts"]["python"]["prefix"] == "<env>"


def test_show_host_shares_it_all() -> None:
    md = markdown.render(report(), style=Style(show_host=True))
    assert "gpu-node-17.corp.example" in md and PREFIX in md


def test_jaxs_block_is_verbatim_and_each_fix_is_a_block_to_copy() -> None:
    md = markdown.render(report())
    block = md.split("`jax.print_environment_info()`:\n\n```text\n", 1)[1].split("\n```\n", 1)[0]
    assert block == INFO.replace("gpu-node-17.corp.example", "<host>")  # line by line, as jax printed it
    assert "  ```sh\n  pip install x\n  ```" in md  # the finding's fix, under its list item
