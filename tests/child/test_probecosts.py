"""A probe's time is remembered where it ran to its end with the compilation cache, and a bound plans with it next
time (files/probecosts.py): a node's second health check runs what its cold first one could not."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from envaudit.files import probecosts


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ENVAUDIT_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_times_are_kept_per_interpreter_and_platform_and_a_run_cut_short_forgets_its_own(cache: Path) -> None:
    here, there = probecosts.key("/env/bin/python", "tpu"), probecosts.key("/env/bin/python", "cpu")
    assert probecosts.remembered(here) == {}
    probecosts.remember(here, {"conv_chain": (4.8, 4.4), "fft": (4.6, None)}, [])
    # its first time: what it spent compiling is mostly what the cache saves; a probe that says nothing of it, whole
    assert probecosts.remembered(here) == {"conv_chain": pytest.approx(0.84), "fft": 4.6}
    probecosts.remember(here, {"conv_chain": (0.34, 0.2)}, ["fft"])  # warm now; fft was cut: nothing was cached
    assert probecosts.remembered(here) == {"conv_chain": 0.34}
    assert probecosts.remembered(there) == {}
    assert (cache / probecosts.NAME).is_file()


@pytest.mark.parametrize("text", ["", "[]", "{", '{"tpu:/x": {"a": -1, "b": "1", "c": 1e9, "d": true}}', "null"])
def test_a_bad_or_foreign_file_is_the_declared_costs_again(cache: Path, text: str) -> None:
    cache.mkdir(mode=0o700, parents=True, exist_ok=True)
    (cache / probecosts.NAME).write_text(text)
    assert probecosts.remembered("tpu:/x") == {}
    probecosts.remember("tpu:/x", {"a": (1.5, None)}, [])
    assert probecosts.remembered("tpu:/x") == {"a": 1.5}


def test_the_file_stays_bounded(cache: Path) -> None:
    for i in range(probecosts.MAX_KEYS + 10):
        probecosts.remember(
            f"cpu:/env{i}/bin/python", {f"p{j}": (1.0, None) for j in range(probecosts.MAX_RUNS + 5)}, []
        )
    table = json.loads((cache / probecosts.NAME).read_text())
    assert len(table) == probecosts.MAX_KEYS and f"cpu:/env{probecosts.MAX_KEYS + 9}/bin/python" in table
    assert all(len(runs) == probecosts.MAX_RUNS for runs in table.values())


@pytest.mark.jax
def test_an_audit_remembers_what_each_probe_took_and_the_next_plans_with_it(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real audit of two probes with the cache: their times are kept for this interpreter on this platform, and
    the next run's request carries them as its costs; with --no-cache nothing is read or kept."""
    from envaudit.child import state
    from envaudit.commands import _shared

    monkeypatch.delenv("ENVAUDIT_NO_CACHE", raising=False)
    opts = state.Options(("matmul_precision", "ieee_special"), timeout=120, total=300)
    report = _shared.run_audit(quick=False, timeout=120, probes=opts)
    ran = {p.run.label: p for p in report.probes if p.status in ("pass", "fail")}
    assert ran and all(0 <= (p.compile_s or 0) <= p.duration_s for p in ran.values())
    assert ran["ieee_special"].compile_s is not None  # it compiles with the kit, which says when
    assert ran["matmul_precision"].compile_s is None  # it says nothing of compiling: no time is made up for it
    kept = probecosts.remembered(probecosts.key(sys.executable, "cpu"))
    assert set(kept) == set(ran) and all(0 < kept[label] <= p.duration_s + 5e-4 for label, p in ran.items()), (
        kept,
        {k: (p.duration_s, p.compile_s) for k, p in ran.items()},
    )
    warm = _shared._warm(state.Options(opts.names, python=sys.executable))
    assert dict(warm.costs) == probecosts.remembered(probecosts.key(sys.executable, "cpu"))
    assert _shared._warm(state.Options(opts.names, python=sys.executable, cache=False)).costs == ()
