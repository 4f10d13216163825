"""envaudit test suite."""
