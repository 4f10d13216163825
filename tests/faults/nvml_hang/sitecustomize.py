"""Fault nvml_hang: NVML stops answering, as when a GPU has fallen off the bus (Xid 79): `import pynvml` gives the
test fake (tests/fakes/fake_pynvml.py, the real names and exception classes) whose nvmlInit blocks for an hour.
"""

from __future__ import annotations

import sys

from tests.fakes.fake_pynvml import make_fake_pynvml

sys.modules["pynvml"] = make_fake_pynvml({"nvmlInit": {"hang": 3600}})
