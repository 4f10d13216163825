"""The scheduled refresh (.github/workflows/refresh-knowledge.yml) runs on a schedule and on demand, and the refresh
command it runs is one `python -m derive` takes."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped, unused-ignore]

from derive.__main__ import _parser

WORKFLOW = Path(__file__).resolve().parents[2] / ".github" / "workflows" / "refresh-knowledge.yml"


def test_the_refresh_runs_weekly_and_on_demand_with_a_command_derive_takes() -> None:
    flow: dict[Any, Any] = yaml.safe_load(WORKFLOW.read_text())
    triggers = flow[True]  # YAML 1.1 reads the key `on` as true
    assert triggers["schedule"][0]["cron"].split()[4] in ("1", "MON") and "workflow_dispatch" in triggers
    steps = flow["jobs"]["refresh"]["steps"]
    runs = [line for s in steps for line in str(s.get("run", "")).splitlines() if "python -m derive refresh" in line]
    assert len(runs) == 1
    words = shlex.split(runs[0].split("|")[0].replace('"$RUNNER_TEMP/jax.git"', "/tmp/jax.git"))
    parsed = _parser().parse_args(words[3:])
    assert parsed.verb == "refresh" and parsed.jax_git == Path("/tmp/jax.git") and not parsed.offline
    assert any("create-pull-request" in str(s.get("uses", "")) for s in steps)
