"""The Prometheus families of probe metrics: read from the judge's one table, one quantity and unit each.

The families are declared in envaudit/model/metrics.toml beside the naming conventions (formats/families.py reads
it, as the judge does, without importing the judge): a metric is read with the judge's kind, so a new probe metric
named by the conventions lands in its family with no edit, and the values a probe writes for non-finite numbers
reach Prometheus as what they say.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from envaudit.formats import families, render
from envaudit.judge import table
from envaudit.model.report import ProbeResult
from tests.conftest import ROOT, sample_report

REPORTS = [
    ROOT / "tests" / "fixtures" / "replay" / "h200-default-settings.json",
    ROOT / "tests" / "golden" / "readme-audit.json",
]
# names the probes write that the saved reports lack (ntk_nt, known_regressions' cases, the runner's flags), and
# names a new probe could write by the conventions
MORE = [
    "rel_err_impl1",
    "rel_err_impl2_batch4",
    "rel_diff_impl3_batch1",
    "rel_err_impl1_default",
    "seconds_impl2",
    "bitwise_equal_impl1_batch4",
    "output_dtype_impl1",
    "error_impl3",
    "import_error",
    "rel_err_jaxlib_0102_vmap_matvec",
    "declared_cost_s",
    "not_run",
    "jax_not_started",
    "max_abs_diff_batched",
    "rel_err_brand_new_case",
    "rerun_rel_diff_brand_new",
    "effective_bits_brand_new",
]


def _saved_names() -> list[str]:
    names: dict[str, None] = {}
    for path in REPORTS:
        for probe in json.loads(path.read_text())["probes"]:
            names |= dict.fromkeys(probe["metrics"])
    assert len(names) > 30  # the reports were read
    return list(names)


def test_a_metric_is_read_with_the_judges_kind() -> None:
    """Two readers of one table must agree, or the exporter would file a metric the judge reads otherwise."""
    loaded = families.load()
    assert {name: loaded.kind(name) for name in [*_saved_names(), *MORE]} == {
        name: table.kind(name) for name in [*_saved_names(), *MORE]
    }


@pytest.mark.parametrize(
    ("metric", "family"),
    [
        ("rel_err_brand_new_case", "envaudit_probe_relative_error_ratio"),  # error: a new probe's, no edit
        ("rel_err_brand_new_default", "envaudit_probe_relative_error_ratio"),  # default_error: the same quantity
        ("neg_eig_rel", "envaudit_probe_relative_error_ratio"),
        ("rerun_rel_diff_brand_new", "envaudit_probe_rerun_difference_ratio"),  # rerun
        ("rerun_rel_diff_scatter_add", "envaudit_probe_rerun_difference_ratio"),  # nondeterministic
        ("max_abs_diff_batched", "envaudit_probe_rerun_absolute_difference"),  # a rerun, but absolute: not a ratio
        ("effective_bits_brand_new", "envaudit_probe_mantissa_binary_digits"),
        ("seconds_impl1", "envaudit_probe_step_duration_seconds"),
        ("declared_cost_s", "envaudit_probe_declared_cost_seconds"),
        ("examples", None),  # a problem's size: a number of the probe, not of the machine
        ("max_eigenvalue", None),
        ("output_dtype", None),
        ("error_impl1", None),
    ],
)
def test_each_metric_goes_to_the_family_of_its_quantity(metric: str, family: str | None) -> None:
    found = families.family(metric)
    assert (found.name if found else None) == family


def _samples(probe: ProbeResult) -> dict[str, dict[tuple[str, str], float]]:
    text = render(replace(sample_report(), probes=(probe,)), "prometheus")
    return {
        f.name: {(s.labels["probe"], s.labels["metric"]): s.value for s in f.samples}
        for f in text_string_to_metric_families(text)
        if f.name.startswith("envaudit_probe_") and "metric" in {k for s in f.samples for k in s.labels}
    }


def test_the_textfile_holds_each_numeric_metric_once_in_its_family_and_nothing_else() -> None:
    metrics: dict[str, Any] = {
        "rel_err_batched": 2e-7,
        "rel_err_batched_default": "inf",  # a probe writes a non-finite number as its repr: the worst answer
        "rerun_rel_diff": 0,
        "rerun_rel_diff_scatter_add": "nan",
        "effective_bits_default": 20.5,
        "examples": 8,
        "bitwise_equal_batched_per_example": True,  # a flag, not a number
        "output_dtype": "float32",
        "rel_err_words": "not a number",  # a string is a number only as a probe writes one
    }
    found = _samples(ProbeResult("conv_chain", "pass", metrics))
    assert set(found) == {
        "envaudit_probe_relative_error_ratio",
        "envaudit_probe_rerun_difference_ratio",
        "envaudit_probe_mantissa_binary_digits",
    }
    assert found["envaudit_probe_relative_error_ratio"] == {
        ("conv_chain", "rel_err_batched"): 2e-7,
        ("conv_chain", "rel_err_batched_default"): math.inf,
    }
    reruns = found["envaudit_probe_rerun_difference_ratio"]
    assert reruns[("conv_chain", "rerun_rel_diff")] == 0 and math.isnan(
        reruns[("conv_chain", "rerun_rel_diff_scatter_add")]
    )
    assert found["envaudit_probe_mantissa_binary_digits"] == {("conv_chain", "effective_bits_default"): 20.5}


def test_the_shipped_families_are_distinct_and_none_is_one_of_the_exporters_own() -> None:
    shipped = [f.name for f in families.load().families]
    own = {f.name for f in text_string_to_metric_families(render(replace(sample_report(), probes=()), "prometheus"))}
    assert len(set(shipped)) == len(shipped) and not set(shipped) & own


BASE: dict[str, Any] = {"metric": [{"pattern": "^rel_", "kind": "error"}]}


@pytest.mark.parametrize(
    ("entry", "says"),
    [
        ({"name": "envaudit_probe_x_ratio", "help": "h", "kinds": ["nope"]}, "kinds must be among"),
        ({"name": "envaudit_probe_x_ratio", "help": "h", "kinds": ["error"], "pattern": "^x"}, "one of the two"),
        ({"name": "envaudit_probe_x_ratio", "help": "h"}, "one of the two"),
        ({"name": "probe_x_ratio", "help": "h", "pattern": "^x"}, "envaudit_probe_* metric name"),
        ({"name": "envaudit_probe_X", "help": "h", "pattern": "^x"}, "envaudit_probe_* metric name"),
        ({"name": "envaudit_probe_x", "help": "", "pattern": "^x"}, "help text"),
        ({"name": "envaudit_probe_x", "help": "h", "pattern": "(x"}, "not a regular expression"),
        ({"name": "envaudit_probe_x", "help": "h", "pattern": "^x", "unit": "s"}, "has name, help"),
    ],
)
def test_a_wrong_family_entry_is_refused_at_load_time(entry: dict[str, Any], says: str) -> None:
    with pytest.raises(families.TableError, match=says.replace("*", r"\*")):
        families.parse({**BASE, "family": [entry]})


def test_a_family_name_is_declared_once() -> None:
    entry = {"name": "envaudit_probe_x_ratio", "help": "h", "kinds": ["error"]}
    with pytest.raises(families.TableError, match="a new envaudit_probe"):
        families.parse({**BASE, "family": [entry, entry]})
