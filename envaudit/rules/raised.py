"""What kind of failure an error line shows, as a maintainer reads it before knowing the cause: the environment's
(an import, a module's missing name, a backend, the runtime, a crash), the program's (a value or a type the
program or a library's check of its arguments refused: TypeError, ValueError, jax's tracer errors, a library's own
annotation error), or the program's configuration of jax (a backend failing to start after the program chose jax's
platforms itself). Only the environment's shape is a question for envaudit: an error of another shape on a stack
with no known problem is the program's to answer (rules/reported.py).

The reading is by the exception's class, as Python's own hierarchy places it (`builtins`: TypeError, ValueError,
LookupError, ArithmeticError... are what a program raises about its values; ImportError, OSError, RuntimeError,
AttributeError, MemoryError, SystemError are what a broken environment raises), and, for a class a library defines,
by the builtin its name ends with (ConcretizationTypeError, a TypeError) or words that name the runtime
(XlaRuntimeError, InternalError). A value or type error that is how a version mismatch shows (an unexpected keyword
argument, a positional argument count, a type not subscriptable on an older Python, a binary built for another
NumPy) is the environment's. A release named beside the error ("after upgrading to jax 0.6.0 ... a TypeError") does
not make it the environment's: a bug of that release (diffrax#622's grad of vmap of custom_jvp) reads the same as a
library's break.
"""

from __future__ import annotations

import builtins
import re

from envaudit.model.facts import ErrorShape

# builtins a program raises about its own values and types (subclasses included: KeyError, IndexError, UnicodeError,
# ZeroDivisionError, OverflowError...), as Python's hierarchy places them
PROGRAM_BASES: tuple[type[BaseException], ...] = (TypeError, ValueError, LookupError, ArithmeticError, AssertionError)
# (NotImplementedError is not among them: what a release has not implemented yet another release may have)
PROGRAM_OTHERS: tuple[type[BaseException], ...] = (NameError, RecursionError, StopIteration)
PROGRAM_BUILTINS = frozenset(
    name
    for name, value in vars(builtins).items()
    if isinstance(value, type)
    and issubclass(value, BaseException)
    and issubclass(value, PROGRAM_BASES + PROGRAM_OTHERS)
    and not issubclass(value, (ImportError, OSError))
)
BUILTIN_EXCEPTIONS = frozenset(
    name for name, value in vars(builtins).items() if isinstance(value, type) and issubclass(value, BaseException)
)
# the builtins a library's class name ends with that make it one of the program's (jax's ConcretizationTypeError,
# NonConcreteBooleanIndexError; flax's ScopeParamShapeError is a ValueError and says so only in its base)
PROGRAM_ENDINGS = ("TypeError", "ValueError", "IndexError", "KeyError", "AssertionError", "ShapeError")
# words in a library class's name that name the runtime, the device or the installation, not the program's values
# (jax's XlaRuntimeError and JaxRuntimeError, TensorFlow's InternalError, NotFoundError, UnavailableError)
ENVIRONMENT_WORDS = re.compile(
    r"Runtime|Internal|Import|OS|IO|Memory|Resource|Device|Backend|Cuda|CUDA|Xla|XLA|Driver|Plugin|"
    r"Unavailable|Unimplemented|NotFound|Library|Compil|Link|Load|Version|Platform|System|Permission|Timeout"
)
# how a version mismatch shows in a value or type error: a callable of another release (a keyword it lacks, another
# count of arguments), an annotation an older Python cannot evaluate, an extension built for another NumPy
MISMATCH = re.compile(
    r"unexpected keyword argument|got multiple values for|positional argument|required keyword-only argument"
    r"|object is not subscriptable|unsupported operand type\(s\) for \|"
    r"|size changed, may indicate binary incompatibility|compiled using NumPy|_ARRAY_API|numpy\.core\.multiarray"
    r"|has no attribute|cannot import name|No module named|is not a module|not supported on this platform"
    r"|is not a supported wheel|requires Python|\bjaxlib\b|\bversions?\b"
    r"|\b(?:INTERNAL|UNKNOWN|FAILED_PRECONDITION|RESOURCE_EXHAUSTED|UNIMPLEMENTED|DATA_LOSS|ABORTED|UNAVAILABLE):",
    re.IGNORECASE,
)
# an exception's class as a line names it (a dotted path allowed), before a colon or at the line's end: what the
# triage reader takes for an error line (commands/triage/extract.ERROR) and what `exception` reads the class from
EXCEPTION_CLASS = r"(?:[A-Za-z_]\w{0,60}+\.){0,8}+([A-Z]\w{0,60}+(?:(?<=Error)|(?<=Exception)))(?::|\s*+$)"
RAISED = re.compile(r"(?:^|(?<=[\s:>|`'\"(\[#]))" + EXCEPTION_CLASS)
# a backend jax could not start or does not know: where the program chose jax's platforms, that choice is the cause
BACKEND = re.compile(
    r"(?i)\b(?:initiali[sz]e|unknown|start)\s++backend\b"
    r"|\bbackend\b[^.]{0,80}?\b(?:initiali[sz]e|unknown|not found|failed)"
)


def exception(text: str) -> str:
    """The name of the exception class a line names first ("" none)."""
    found = RAISED.search(text)
    return found[1] if found and found[1] not in ("Error", "Exception") else ""  # "## Error" names no class


def program_class(name: str) -> bool:
    """Whether an exception class is one a program raises about its own values and types."""
    if name in BUILTIN_EXCEPTIONS:
        return name in PROGRAM_BUILTINS
    if name.endswith(PROGRAM_ENDINGS):
        return True
    return ENVIRONMENT_WORDS.search(name) is None


FAILED_BACKEND = re.compile(r"(?i)backend '(\w+)'")  # the backend an error names


def shape(text: str, *, platforms_chosen: frozenset[str] = frozenset(), importing: bool = False) -> ErrorShape:
    """The shape of one error line. `platforms_chosen`: the platforms the text's program chooses for jax itself
    (jax.config.update('jax_platforms', ...), os.environ['JAX_PLATFORMS'] = ... in its code): a backend failing that
    the program did not name is the choice's doing ('gpu' also tried rocm; cpu set after jax started cuda), one it
    named is the environment's (the program asked for cuda, and cuda did not start). `importing`: raised while an
    installed module was imported (its traceback's frames are module bodies in site-packages): the environment's,
    whatever its class (protobuf's "Descriptors cannot be created directly", a dataclass default a newer Python
    refuses)."""
    if platforms_chosen and BACKEND.search(text):
        failed = FAILED_BACKEND.search(text)
        if failed is None or failed[1].lower() not in platforms_chosen:
            return "configuration"
        return "environment"
    if importing:
        return "environment"
    name = exception(text)
    if name and program_class(name) and not MISMATCH.search(text):
        return "program"
    return "environment"
