"""The entry points derived from a library's README (derive/tables/entry_points.py): its Python code blocks read
with ast, the calls of the library's names kept; offline."""

from __future__ import annotations

from derive.tables import entry_points

README = """
# kfac

Install:

```bash
pip install kfac-jax
```

```python
import jax
import kfac_jax as kj
from kfac_jax.utils import inner_product

kj.register_softmax_cross_entropy_loss(logits, targets)
norm = inner_product(params, params)
optimizer = kj.Optimizer(value_and_grad_func=f, l2_reg=0.0)
state = optimizer.init(params, key, batch)
params, state, stats = optimizer.step(params, state, key)
jax.jit(optimizer)(params)
```

```python
this is no python
```

```pycon
>>> import kfac_jax
>>> kfac_jax.patches_moments(x)
Array(...)
```
"""


def test_the_calls_of_the_librarys_names_in_the_readme_code_are_its_entry_points() -> None:
    found = dict(entry_points.derive(README, ["kfac_jax"]))
    assert list(found) == [
        "kfac_jax.register_softmax_cross_entropy_loss",
        "kfac_jax.utils.inner_product",
        "kfac_jax.Optimizer.__init__",
        "kfac_jax.Optimizer.init",
        "kfac_jax.Optimizer.step",
        "kfac_jax.patches_moments",
    ]
    assert found["kfac_jax.Optimizer.step"] == [
        "optimizer = kj.Optimizer(value_and_grad_func=f, l2_reg=0.0)",
        "params, state, stats = optimizer.step(params, state, key)",
    ]


def test_a_namespace_packages_module_and_an_instance_called() -> None:
    code = "import orbax.checkpoint as ocp\nckpt = ocp.StandardCheckpointer()\nckpt.save(path, tree)\nckpt(x)\n"
    assert [e for e, _ in entry_points.calls(code, ["orbax.checkpoint"])] == [
        "orbax.checkpoint.StandardCheckpointer.__init__",
        "orbax.checkpoint.StandardCheckpointer.save",
        "orbax.checkpoint.StandardCheckpointer.__call__",
    ]
    assert entry_points.calls("import numpy as np\nnp.zeros(3)\n", ["orbax.checkpoint"]) == []


def test_rst_code_blocks_are_read_and_other_languages_skipped() -> None:
    readme = "Use it::\n\n.. code-block:: python\n\n    import klujax\n    x = klujax.solve(Ai, Aj, Ax, b)\n\nDone.\n"
    assert [b.strip() for b in entry_points.code_blocks(readme)] == ["import klujax\nx = klujax.solve(Ai, Aj, Ax, b)"]
    assert list(entry_points.code_blocks("```bash\nklujax.solve()\n```\n")) == []
