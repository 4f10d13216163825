"""Python/platform facts: parsers tested with captured /proc/cpuinfo text; live collectors never raise."""

from __future__ import annotations

import json

from envaudit.collect import system
from envaudit.model import redact

X86 = """processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 1
model name\t: AMD EPYC 7763 64-Core Processor
stepping\t: 1
"""
ARM = """processor\t: 0
BogoMIPS\t: 50.00
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics
CPU implementer\t: 0x41
CPU architecture: 8
CPU variant\t: 0x3
CPU part\t: 0xd0c
"""


def test_parse_cpu_model() -> None:
    assert system.parse_cpu_model(X86) == "AMD EPYC 7763 64-Core Processor"
    assert system.parse_cpu_model(ARM) == "Arm implementer 0x41 part 0xd0c"
    assert system.parse_cpu_model("") is None


def test_select_env_keeps_what_changes_numerics() -> None:
    env = {
        "XLA_FLAGS": "--xla_gpu_deterministic_ops=true",
        "JAX_ENABLE_X64": "1",
        "NVIDIA_TF32_OVERRIDE": "0",
        "CUDA_VISIBLE_DEVICES": "0,1",
        "TF_CUDNN_DETERMINISTIC": "1",
        "HOME": "/root",
        "AWS_SECRET_ACCESS_KEY": "x",
        "LD_LIBRARY_PATH": "/usr/lib:/usr/local/cuda-12.4/lib64:/opt/nvidia/cudnn/lib",
    }
    chosen = redact.select_env(env)
    assert set(chosen) == {
        "XLA_FLAGS",
        "JAX_ENABLE_X64",
        "NVIDIA_TF32_OVERRIDE",
        "CUDA_VISIBLE_DEVICES",
        "TF_CUDNN_DETERMINISTIC",
        "LD_LIBRARY_PATH",
    }
    assert chosen["LD_LIBRARY_PATH"] == "/usr/local/cuda-12.4/lib64:/opt/nvidia/cudnn/lib"


def test_live_facts_are_complete_and_json() -> None:
    py, pl = system.get_python(), system.get_platform()
    json.dumps([py, pl])
    assert py["version"].count(".") == 2 and py["implementation"] == "CPython"
    assert pl["system"] == "Linux"
    assert isinstance(pl["memory_total_bytes"], int) and pl["memory_total_bytes"] > 2**28
    assert (pl["cpu_logical_cores"] or 0) >= 1
