"""Tests of envaudit.collect."""
