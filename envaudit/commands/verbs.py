"""The verbs that do not audit: `hook` (enable, disable or show the import-time warning hook), `probes` and `rules`
(what envaudit knows, listed or one shown in full), `schema` (the JSON Schema of a document envaudit writes). They
print and set the exit code like the rest of the command line (envaudit/cli/ dispatches to them); each imports what
it shows where it is used, so that none of it loads before a full audit has started its jax child.
"""

from __future__ import annotations

import sys

from envaudit.files import probefiles
from envaudit.model.exitcodes import Exit, UsageError

SCHEMAS = ("report", "triage")  # the documents `envaudit schema` describes


def hook(action: str, user: bool, python: str | None = None) -> int:
    from envaudit.commands import hook as import_hook

    if python and action != "status":
        raise UsageError("--python is for `hook status`: enable or disable the hook with that interpreter itself")
    if action == "enable":
        print(f"envaudit hook enabled: {import_hook.enable(user)}")
    elif action == "disable":
        removed = import_hook.disable()
        print("envaudit hook disabled: " + (", ".join(map(str, removed)) if removed else "it was not enabled"))
    else:
        from envaudit.collect import outside

        print("\n".join(import_hook.status(outside.resolve(python) if python else None)))
    return Exit.OK


def probes(name: str | None, script: bool) -> int:
    known = probefiles.available()
    if name is None:
        for probe, path in known.items():
            print(f"{probe:<18}{probefiles.summary(path)}")
        return Exit.OK
    if name not in known:
        raise UsageError(f"no probe {name!r}; `envaudit probes` lists them")
    print(
        probefiles.script(known[name])
        if script
        else f"{name}: {probefiles.summary(known[name])}\n  file: {known[name]}"
    )
    return Exit.OK


def rules(rule_id: str | None) -> int:
    from envaudit import rules as knowledge

    entries = knowledge.catalogue()
    if rule_id is None:
        width = max(len(e.id) for e in entries)
        for e in entries:
            print(f"{e.id.ljust(width)}  {e.severity:<4}  {e.kind:<5}  {e.title}")
        return Exit.OK
    match = [e for e in entries if e.id == rule_id]
    if not match:
        raise UsageError(f"no rule {rule_id!r}; `envaudit rules` lists them")
    e = match[0]
    print(f"{e.id} ({e.severity}, {e.kind})\n  {e.title}")
    if e.symptom:
        print(f"  symptom: {e.symptom}")
    print(f"  fix: {e.fix}")
    if e.pins:
        print(f"  pins: {' '.join(e.pins)} (installed by the audited interpreter, with what they would break)")
    for ref in e.references:
        print(f"  see: {ref}")
    if e.notes:
        print(f"  notes: {e.notes}")
    return Exit.OK


def schema(name: str) -> int:
    """The JSON Schema of a document (cli_parser.SCHEMAS), generated from its types: the report's, or triage's."""
    from envaudit.model import schema as docschema

    if name == "triage":
        from envaudit.commands.triage.schema import TRIAGE as shape
    elif name == "report":
        shape = docschema.REPORT
    else:
        raise UsageError(f"no schema {name!r}; the schemas: {', '.join(SCHEMAS)}")
    sys.stdout.write(docschema.dumps(docschema.generate(shape)))
    return Exit.OK
