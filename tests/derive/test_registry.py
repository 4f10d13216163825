"""The registry of derivations (derive/registry.py) is whole: every table envaudit declares has exactly one line,
derived by a module that exists, or read by hand with its reason; a derivation runs after the tables it reads."""

from __future__ import annotations

import importlib

import pytest

from derive import registry
from envaudit.rules.table import TABLES


def test_every_declared_table_has_exactly_one_derivation_or_a_reason() -> None:
    declared = set(registry.declared_tables())
    listed = [d.table for d in registry.DERIVATIONS]
    assert len(listed) == len(set(listed)), "a table listed twice"
    assert declared <= set(listed), f"declared without a derivation: {sorted(declared - set(listed))}"
    for d in registry.DERIVATIONS:
        assert (TABLES / d.table).is_file(), d.table
        assert bool(d.by_hand) != bool(d.module), f"{d.table}: a derivation module or a reason, not both"
        assert d.reads and d.keyed and d.confirmed, d.table


def test_each_derivation_module_has_a_main_and_says_what_it_writes() -> None:
    for d in registry.DERIVATIONS:
        if d.module:
            module = importlib.import_module(d.module)
            assert callable(module.main), d.module
            assert module.__doc__ and "usage: python -m " + d.module in module.__doc__, d.module


def test_a_derivation_runs_after_what_it_reads_and_a_chosen_one_runs_alone() -> None:
    order = [d.table for d in registry.ordered()]
    for d in registry.DERIVATIONS:
        for before in d.after:
            assert order.index(before) < order.index(d.table)
    chosen = [d.table for d in registry.ordered({"coverage.toml", "derived/libraries.toml"})]
    assert chosen == ["derived/libraries.toml", "coverage.toml"]  # in order, and nothing it reads re-derived


def test_a_registry_that_lists_a_table_before_what_it_reads_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = registry.DERIVATIONS[0], registry.DERIVATIONS[1]
    assert second.after == (first.table,)
    monkeypatch.setattr(registry, "DERIVATIONS", (second, first, *registry.DERIVATIONS[2:]))
    with pytest.raises(ValueError, match="listed before"):
        registry.ordered()
