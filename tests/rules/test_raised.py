"""The shape of an error line (rules/raised.py), read by its exception's class as Python's hierarchy places it: the
program's values and types, or the environment's imports, runtime and crashes; a value or type error that is how a
version mismatch shows is the environment's."""

from __future__ import annotations

import pytest

from envaudit.rules import raised


@pytest.mark.parametrize(
    ("line", "shape"),
    [
        ("ValueError: Incompatible shapes for broadcasting: shapes=[(3,), (4,)]", "program"),
        ("KeyError: 'params'", "program"),  # a LookupError, as Python places it
        ("ZeroDivisionError: division by zero", "program"),
        ("jax.errors.ConcretizationTypeError: Abstract tracer value encountered", "program"),  # a library's TypeError
        ("jaxtyping.AnnotationError: Cannot process symbolic axis", "program"),  # a library's own, no runtime word
        ("ModuleNotFoundError: No module named 'jaxlib.mlir.extras'", "environment"),
        ("AttributeError: module 'jax' has no attribute 'tree_multimap'", "environment"),
        ("RuntimeError: jaxlib/gpu/solver_kernels.cc:45: cuSolver internal error", "environment"),
        ("jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory", "environment"),
        ("NotImplementedError: Numpy function <function __getattr__> not yet implemented", "environment"),
        ("Segmentation fault (core dumped)", "environment"),  # no class: the environment's, as before
        ("## Error", "environment"),  # a heading, no class
        # a value or type error that is a version mismatch
        ("TypeError: jit() got an unexpected keyword argument 'abstracted_axes'", "environment"),
        ("TypeError: 'type' object is not subscriptable", "environment"),
        ("ValueError: numpy.dtype size changed, may indicate binary incompatibility.", "environment"),
        # a release named beside it: a jax bug (diffrax#622) or a library's break reads the same; the class decides
        ("after upgrading to jax 0.6.0 ... `TypeError: Argument 'Zero(ShapedArray(float0[32]))'`", "program"),
    ],
)
def test_an_error_lines_shape(line: str, shape: str) -> None:
    assert raised.shape(line) == shape


def test_a_backend_error_is_the_configurations_only_where_the_program_chose_the_platforms() -> None:
    line = "RuntimeError: Unable to initialize backend 'rocm': NOT_FOUND: Could not find registered platform"
    assert raised.shape(line, platforms_chosen=True) == "configuration"
    assert raised.shape(line) == "environment"
    assert raised.shape("ValueError: bad value", platforms_chosen=True) == "program"  # only a backend's error


def test_the_builtins_are_placed_by_pythons_own_hierarchy() -> None:
    """A builtin a newer Python adds lands where its base puts it, with no list to edit."""
    assert {"TypeError", "UnicodeDecodeError", "IndexError", "OverflowError"} <= raised.PROGRAM_BUILTINS
    assert (
        not {"ImportError", "ModuleNotFoundError", "OSError", "RuntimeError", "MemoryError"} & raised.PROGRAM_BUILTINS
    )
