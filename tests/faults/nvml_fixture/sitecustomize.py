"""Fault nvml_fixture: `import pynvml` gives the test fake (tests/fakes/fake_pynvml.py, the real names and exception
classes) answering from the fixture file named by ENVAUDIT_FAKE_NVML, so that a test can make the driver's library
crash its caller ({"nvmlInit": {"crash": "segfault"}}), raise what no NVMLError is ({"nvmlInit": {"raise":
"SystemExit"}}) or hang.
"""

from __future__ import annotations

import sys

from tests.fakes.fake_pynvml import from_environment

sys.modules["pynvml"] = from_environment()
