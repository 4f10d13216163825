"""The smoke calls: one file per library, `<distribution>.py` (`-` as `_`), that the imports probe runs after the
imports (probes/imports.py). Each has DISTRIBUTION, CALL and `run() -> None`, which raises where the call fails;
`skipped() -> str`, where a file has it, says why the call does not apply here ("" where it does). This file marks
the directory as a package for the type checker only: the probe loads each file by its path."""
