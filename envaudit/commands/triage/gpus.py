"""NVIDIA GPUs by the names reports use for them, with their compute capability: one table, which both finds a GPU
named in prose ("GPU, Nvidia A100", "on my RTX 4080") and gives the capability the rules judge.

Capabilities from NVIDIA's table (https://developer.nvidia.com/cuda-gpus). A name is matched as a word, so "A10"
does not match inside "A100": the longest name that matches wins.
"""

from __future__ import annotations

import re

CAPABILITIES = (
    ("GB200", "10.0"),
    ("GH200", "9.0"),
    ("H200", "9.0"),
    ("H100", "9.0"),
    ("H800", "9.0"),
    ("B200", "10.0"),
    ("A100", "8.0"),
    ("A800", "8.0"),
    ("A30", "8.0"),
    ("A6000", "8.6"),
    ("A5000", "8.6"),
    ("A4000", "8.6"),
    ("A2000", "8.6"),
    ("A40", "8.6"),
    ("A10G", "8.6"),
    ("A10", "8.6"),
    ("L40S", "8.9"),
    ("L40", "8.9"),
    ("L4", "8.9"),
    ("RTX 5090", "12.0"),
    ("RTX 5080", "12.0"),
    ("RTX 4090", "8.9"),
    ("RTX 4080", "8.9"),
    ("RTX 4070", "8.9"),
    ("RTX 4060", "8.9"),
    ("RTX 3090", "8.6"),
    ("RTX 3080", "8.6"),
    ("RTX 3070", "8.6"),
    ("RTX 3060", "8.6"),
    ("RTX 2080", "7.5"),
    ("RTX 2070", "7.5"),
    ("RTX 2060", "7.5"),
    ("TITAN RTX", "7.5"),
    ("GTX 1660", "7.5"),
    ("T1000", "7.5"),
    ("T600", "7.5"),
    ("T4", "7.5"),
    ("V100", "7.0"),
    ("TITAN V", "7.0"),
    ("P100", "6.0"),
    ("P40", "6.1"),
    ("GTX 1080", "6.1"),
    ("GTX 1070", "6.1"),
    ("K80", "3.7"),
    ("K40", "3.5"),
    ("M40", "5.2"),
    ("GTX 750", "5.0"),
    # Jetson's integrated GPUs: every Orin (AGX, NX, Nano) 8.7, every Xavier 7.2; named with their family, so that
    # a person called Xavier is no GPU
    ("Jetson Orin", "8.7"),
    ("AGX Orin", "8.7"),
    ("Orin Nano", "8.7"),
    ("Orin NX", "8.7"),
    ("Jetson Xavier", "7.2"),
    ("AGX Xavier", "7.2"),
    ("Xavier NX", "7.2"),
    ("Jetson TX2", "6.2"),
    ("Jetson TX1", "5.3"),
    ("Jetson Nano", "5.3"),
)
# any of the names, as a word (a space in one may be left out: "RTX4090"), longest first
NAMES = re.compile(
    r"\b("
    + "|".join(re.escape(n).replace(r"\ ", " ?") for n, _ in sorted(CAPABILITIES, key=lambda c: -len(c[0])))
    + r")(?![A-Za-z0-9])"
)  # as NVIDIA writes them: a lower-case "t4" is a variable's name


def capability(name: str) -> str | None:
    """The compute capability of the GPU a name (an nvidia-smi row, or prose) names, if the table has it."""
    found = NAMES.search(name)
    key = found[1].upper().replace(" ", "") if found else ""
    return next((cc for n, cc in CAPABILITIES if n.replace(" ", "").upper() == key), None)
