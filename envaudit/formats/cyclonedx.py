"""CycloneDX 1.6 (https://cyclonedx.org/docs/1.6/json/): the audited environment as a software bill of materials.

What the report's facts hold, each a component: every package of the audited stack (`Facts.packages`, envaudit's
scope: jax, its plugins and libraries, NumPy, the NVIDIA wheels; not every distribution in the environment) as a
`library` with its package URL, `pkg:pypi/NAME@VERSION` (purl-spec, types/pypi-definition.json: the name lowercased,
`_` as `-`; name and version percent-encoded as the purl specification's "Character encoding" says); the NVIDIA
driver as a `device-driver`; the CUDA libraries jax loaded (`jax.cuda_libraries`, and the runtime and cuDNN in the
versions jax's facts decode: `cuda_version`, `cudnn_version`) as `library` components of the group `nvidia`. The
environment itself is the BOM's `metadata.component` (a `platform`: the Python that runs it), envaudit the tool in
`metadata.tools`, and the packages' requirements on each other (`Facts.requires`) the `dependencies`.

The verdict, the mode and where the facts come from are properties of the metadata (`envaudit:verdict`, ...: names in
envaudit's own namespace, as the property taxonomy asks of names it does not register,
https://github.com/CycloneDX/cyclonedx-property-taxonomy). Each finding is an `annotation` (CycloneDX 1.5 and later:
"a comment, note, explanation, or similar textual content which provides additional context to the object(s) being
annotated"), made by envaudit, about the components it names (`Finding.about`) or else the environment; it is no
`vulnerability`, which would claim an advisory. An annotation needs a timestamp: where the report's `created` is
none, each finding is an `envaudit:finding` property instead (a property's name may repeat).
"""

from __future__ import annotations

import json
import re
import uuid
from datetime import datetime
from typing import Any
from urllib.parse import quote

from envaudit.formats import summary
from envaudit.formats.sarif import INFORMATION_URI
from envaudit.formats.style import PLAIN, Style
from envaudit.model.report import Finding, Report
from envaudit.model.scope import canonicalize_name

SCHEMA = "http://cyclonedx.org/schema/bom-1.6.schema.json"  # the published schema's $id
SPEC_VERSION = "1.6"
ENVIRONMENT = "environment"  # the bom-ref of the audited environment (metadata.component)
TOOL = "tool:envaudit"
DRIVER = "nvidia-driver"
NAME = re.compile(r"\s*[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")  # PEP 508's name, at a requirement's start


def purl(name: str, version: str) -> str:
    """`pkg:pypi/NAME@VERSION` (purl-spec: a PyPI name is lowercased with `_` as `-`; name and version percent-
    encoded, every character but the alphanumerics, `.-_~` and `:`)."""
    normal = name.lower().replace("_", "-")
    return f"pkg:pypi/{quote(normal, safe=':')}" + (f"@{quote(version, safe=':')}" if version else "")


def timestamp(created: str) -> str | None:
    """The report's `created` as an RFC 3339 date-time (CycloneDX's `date-time`), or None where it is not one with
    its offset."""
    try:
        when = datetime.fromisoformat(created.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when.isoformat().replace("+00:00", "Z") if when.tzinfo is not None else None


def _property(name: str, value: object) -> dict[str, str]:
    return {"name": f"envaudit:{name}", "value": str(value)}


def _tool(report: Report) -> dict[str, Any]:
    tool: dict[str, Any] = {"type": "application", "name": "envaudit"}
    if report.envaudit_version:
        tool["version"] = report.envaudit_version
    return tool | {"externalReferences": [{"type": "website", "url": INFORMATION_URI}]}


def _packages(report: Report) -> list[dict[str, Any]]:
    found = []
    for name, version in report.facts.packages.items():
        component: dict[str, Any] = {"type": "library", "bom-ref": purl(name, version), "name": name}
        if version:
            component["version"] = version
        component["purl"] = purl(name, version)
        if installer := report.facts.installers.get(name):
            component["properties"] = [_property("installer", installer)]
        found.append(component)
    return found


def _nvidia(report: Report) -> list[dict[str, Any]]:
    """The driver NVML reported, and each CUDA library jax loaded with its version (an error asking for one: not
    a component)."""
    nvidia, jax = report.facts.nvidia, report.facts.jax
    found: list[dict[str, Any]] = []
    if driver := nvidia.get("driver_version"):
        component: dict[str, Any] = {"type": "device-driver", "bom-ref": DRIVER, "group": "nvidia"}
        component |= {"name": "nvidia-driver", "version": str(driver)}
        if cuda := nvidia.get("cuda_driver_version"):
            component["properties"] = [_property("cuda_driver_version", cuda)]
        found.append(component)
    reported = {k: v for k, v in (jax.get("cuda_libraries") or {}).items() if isinstance(v, int) and v is not True}
    decoded = {"cuda_runtime": jax.get("cuda_version"), "cudnn": jax.get("cudnn_version")}
    for library in dict.fromkeys([*reported, *(k for k, v in decoded.items() if v)]):
        component = {"type": "library", "bom-ref": f"cuda-library:{library}", "group": "nvidia", "name": library}
        component |= {"version": str(decoded.get(library) or reported[library])}
        component["description"] = "loaded by jax (jax._src.lib.cuda_versions)"
        if library in reported:
            component["properties"] = [_property("reported_version", reported[library])]
        found.append(component)
    return found


def _environment(report: Report) -> dict[str, Any]:
    python = report.facts.python
    component: dict[str, Any] = {
        "type": "platform",
        "bom-ref": ENVIRONMENT,
        "name": str(python.get("implementation") or "Python"),
        "description": "the Python environment envaudit audited",
    }
    if version := python.get("version"):
        component["version"] = str(version)
    said = [("environment", python.get("environment")), ("jax_platform", report.facts.jax.get("platform"))]
    if shown := [_property(name, value) for name, value in said if value]:
        component["properties"] = shown
    return component


def _text(f: Finding) -> str:
    return " ".join([f"envaudit {f.severity}: {f.id}: {f.title or f.id}.", *summary.finding_parts(f)])


def _annotations(report: Report, refs: dict[str, str], when: str) -> list[dict[str, Any]]:
    """Each finding, by envaudit, about the components it names (by canonical name), else the environment."""
    found = []
    for f in report.findings:
        subjects = list(dict.fromkeys(refs[name] for name in f.about if name in refs)) or [ENVIRONMENT]
        annotator = {"component": {k: v for k, v in _tool(report).items() if k != "externalReferences"}}
        found.append({"subjects": subjects, "annotator": annotator, "timestamp": when, "text": _text(f)})
    return found


def required(requirement: str) -> str:
    """The canonical name a requirement (`jaxlib<=0.10.1,>=0.10.1`, `numpy>=2; python_version>='3.11'`) names."""
    found = NAME.match(requirement)
    return canonicalize_name(found[0].strip()) if found else ""


def _dependencies(report: Report, refs: dict[str, str]) -> list[dict[str, Any]]:
    """Each package's requirements on the others in the BOM (`Facts.requires`)."""
    requires = report.facts.requires
    found = []
    for name, ref in refs.items():
        names = (required(r) for r in requires.get(name, ()))
        found.append({"ref": ref, "dependsOn": list(dict.fromkeys(refs[n] for n in names if n in refs and n != name))})
    return found


def document(report: Report) -> dict[str, Any]:
    """The BOM as a JSON value."""
    packages = _packages(report)
    refs = {c["name"]: c["bom-ref"] for c in packages}
    when = timestamp(report.created)
    properties = [
        _property("verdict", report.verdict),
        _property("mode", report.mode),
        _property("origin", report.facts.origin),
    ]
    if when is None:
        properties += [_property("finding", _text(f)) for f in report.findings]
    metadata: dict[str, Any] = {} if when is None else {"timestamp": when}
    metadata |= {"tools": {"components": [_tool(report) | {"bom-ref": TOOL}]}}
    metadata |= {"component": _environment(report), "properties": properties}
    facts = json.dumps([report.created, report.host, report.facts.to_dict()], sort_keys=True, default=str)
    bom: dict[str, Any] = {
        "$schema": SCHEMA,
        "bomFormat": "CycloneDX",
        "specVersion": SPEC_VERSION,
        # the same report is the same BOM; another audit (another `created`, other facts) another serial
        "serialNumber": uuid.uuid5(uuid.NAMESPACE_URL, INFORMATION_URI + facts).urn,
        "version": 1,
        "metadata": metadata,
        "components": packages + _nvidia(report),
        "dependencies": _dependencies(report, refs),
    }
    if when is not None and report.findings:
        bom["annotations"] = _annotations(report, refs, when)
    return bom


def render(report: Report, *, style: Style = PLAIN) -> str:
    del style  # a machine format
    return json.dumps(document(report), indent=2) + "\n"
