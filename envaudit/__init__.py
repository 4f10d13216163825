"""envaudit: tells whether a JAX environment computes the right numbers.

The package is importable without jax, flax or neural-tangents: those are what it audits, so nothing here imports
them in the envaudit process (they are examined through `importlib.metadata` and in child processes).
"""

__version__ = "0.2.0"


class EnvAuditWarning(UserWarning):
    """Category of the import-time hook's warnings, so `-W error::envaudit.EnvAuditWarning` works."""
