"""Every name jax's public modules have had (derive/tables/jax_names.py), and the probe's copy of it."""

from __future__ import annotations

import json
from typing import Any

from derive import generated
from derive.tables import jax_names


def _surface(modules: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {"modules": modules}


def test_the_union_keeps_every_public_name_any_release_had_and_no_private_module() -> None:
    old = _surface(
        {
            "jax.numpy": {"names": ["DeviceArray", "ones"], "children": ["linalg"], "removed": {}, "deprecated": {}},
            "jax._src.core": {"names": ["Thing"]},
        }
    )
    new = _surface(
        {
            "jax.numpy": {"names": ["ones"], "children": ["linalg"], "removed": {"product": "gone"}, "deprecated": {}},
            "jax.tree": {"names": ["map"]},
        }
    )
    names, versions = jax_names.union([("0.4.13", old), ("0.4.25", new)])
    assert versions == ["0.4.13", "0.4.25"]
    assert names["jax.numpy"] == {"DeviceArray", "ones", "linalg", "product"} and names["jax.tree"] == {"map"}
    assert "jax._src.core" not in names
    text = jax_names.render(names, versions)
    assert 'covers_from = "0.4.13"' in text and '"jax.numpy" = "DeviceArray linalg ones product"' in text


def test_the_probe_s_names_are_generated_from_the_table() -> None:
    assert generated.JAX_NAMES.read_text(encoding="utf-8") == generated.jax_names(), "python -m derive refresh"
    document = json.loads(generated.JAX_NAMES.read_text(encoding="utf-8"))
    assert "DeviceArray" in document["names"]["jax.numpy"] and "random" not in document["names"]["jax.numpy"]
