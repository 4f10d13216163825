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


def test_a_backend_error_is_the_configurations_only_where_the_program_chose_other_platforms() -> None:
    """The program chose 'gpu' (jax 0.3 tried rocm too; jax#12335) or 'cpu' (after jax had started cuda; jax#23208):
    the choice's doing. It chose 'cuda' and cuda did not start (a CPU jaxlib on an A100): the environment's."""
    rocm = "RuntimeError: Unable to initialize backend 'rocm': NOT_FOUND: Could not find registered platform"
    cuda = "RuntimeError: Unable to initialize backend 'cuda': Unknown backend cuda"
    assert raised.shape(rocm, platforms_chosen=frozenset({"gpu"})) == "configuration"
    assert raised.shape(cuda, platforms_chosen=frozenset({"cpu"})) == "configuration"
    assert raised.shape(cuda, platforms_chosen=frozenset({"cuda"})) == "environment"
    assert raised.shape(rocm) == "environment"
    assert raised.shape("ValueError: bad value", platforms_chosen=frozenset({"cpu"})) == "program"  # a backend's only


def test_an_error_raised_while_a_module_is_imported_is_the_environments_whatever_its_class() -> None:
    """protobuf 4 under an old `_pb2` module ("TypeError: Descriptors cannot be created directly"), a dataclass
    default a newer Python refuses, ml_dtypes older than jax's float8 types: raised by an import, whatever the
    class."""
    assert raised.shape("TypeError: Descriptors cannot be created directly.", importing=True) == "environment"
    assert raised.shape("TypeError: Descriptors cannot be created directly.") == "program"


@pytest.mark.parametrize(
    "line",
    [
        "ValueError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 1.2GiB",  # an XLA status
        "flax.errors.ApplyModuleInvalidMethodError: not a method of the module",  # flax's own: the program's
    ],
)
def test_an_xla_status_is_the_environments_and_a_librarys_module_error_is_the_programs(line: str) -> None:
    assert raised.shape(line) == ("environment" if "RESOURCE_EXHAUSTED" in line else "program")


def test_the_builtins_are_placed_by_pythons_own_hierarchy() -> None:
    """A builtin a newer Python adds lands where its base puts it, with no list to edit."""
    assert {"TypeError", "UnicodeDecodeError", "IndexError", "OverflowError"} <= raised.PROGRAM_BUILTINS
    assert (
        not {"ImportError", "ModuleNotFoundError", "OSError", "RuntimeError", "MemoryError"} & raised.PROGRAM_BUILTINS
    )
