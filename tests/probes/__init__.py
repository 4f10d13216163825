"""Tests of the standalone known-answer probes (probes/), run as real programs."""
