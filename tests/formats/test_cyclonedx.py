"""`--format cyclonedx`: the audited environment as a CycloneDX 1.6 BOM, valid against the schema CycloneDX publishes
(vendored with the SPDX and JSF schemas it references, tests/fixtures/schemas/), read back as an SBOM tool reads it:
each package a component with its package URL, the driver and the CUDA libraries jax loaded, the verdict and each
finding on it."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any
from urllib.parse import unquote

from hypothesis import given, settings
from hypothesis import strategies as st

from envaudit.formats import FORMATS, cyclonedx
from envaudit.model.report import Finding, Report, Subject
from envaudit.model.scope import canonicalize_name
from tests.conftest import facts_from, sample_report
from tests.formats import published
from tests.replay import REPLAY

PURL = re.compile(r"pkg:pypi/(?P<name>[^@?#/]+)(?:@(?P<version>[^?#]+))?")  # purl-spec: a pypi purl has no namespace


def bom(report: Report) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(FORMATS.render(report, "cyclonedx"))
    assert published.problems(published.cyclonedx(), found) == []
    refs = [c["bom-ref"] for c in _all_components(found)]
    assert len(refs) == len(set(refs))  # a bom-ref is unique within the BOM (the schema cannot say it)
    return found


def _all_components(document: dict[str, Any]) -> list[dict[str, Any]]:
    metadata = document["metadata"]
    return [*document.get("components", []), metadata["component"], *metadata["tools"]["components"]]


def h200() -> Report:
    """A real audit of an H200 node (tests/replay.py): its driver, CUDA and cuDNN as jax reported them."""
    return Report.from_dict(json.loads(REPLAY.read_text(encoding="utf-8")))


def test_each_package_is_a_library_with_a_package_url_that_reads_back() -> None:
    report = h200()
    document = bom(report)
    libraries = {c["name"]: c for c in document["components"] if c.get("purl", "").startswith("pkg:pypi/")}
    assert libraries.keys() == report.facts.packages.keys()
    for name, component in libraries.items():
        match = PURL.fullmatch(component["purl"])
        assert match is not None and component["type"] == "library"
        assert unquote(match["name"]) == name.lower().replace("_", "-")
        assert unquote(match["version"]) == component["version"] == report.facts.packages[name]


@settings(max_examples=200, deadline=None)
@given(
    st.from_regex(r"[A-Za-z0-9]([A-Za-z0-9._-]{0,20}[A-Za-z0-9])?", fullmatch=True),
    st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=20),
)
def test_a_purl_is_lowercased_underscores_as_dashes_and_percent_encoded(name: str, version: str) -> None:
    """purl-spec: a pypi name is lowercased with `_` as `-`; only alphanumerics, `.-_~` and `:` go unencoded."""
    made = cyclonedx.purl(name, version)
    match = PURL.fullmatch(made)
    assert match is not None, made
    assert re.fullmatch(r"pkg:pypi/[A-Za-z0-9.\-_~:%]+@[A-Za-z0-9.\-_~:%]+", made)
    assert unquote(match["name"]) == name.lower().replace("_", "-") and unquote(match["version"]) == version
    assert "_" not in match["name"] and match["name"] == match["name"].lower()


def test_the_driver_and_the_cuda_libraries_jax_loaded_are_components() -> None:
    report = h200()
    components = {c["bom-ref"]: c for c in bom(report)["components"]}
    driver = components["nvidia-driver"]
    assert driver["type"] == "device-driver" and driver["version"] == report.facts.nvidia["driver_version"]
    assert components["cuda-library:cuda_runtime"]["version"] == report.facts.jax["cuda_version"]


def test_each_library_jax_reports_is_a_component_in_the_version_it_decodes() -> None:
    jax = {
        "status": "ok",
        "cuda_libraries": {"cudnn": 91000, "cublas": 120804, "cupti": "error: no CUPTI"},
        "cudnn_version": "9.10.0",
    }
    report = replace(sample_report(), facts=facts_from({"jax": jax}))
    components = {c["name"]: c for c in bom(report)["components"] if c.get("group") == "nvidia"}
    assert components.keys() == {"cudnn", "cublas"}  # an error asking for a version is no component
    assert components["cudnn"]["version"] == "9.10.0" and components["cublas"]["version"] == "120804"


def test_the_verdict_is_a_property_and_each_finding_an_annotation_about_its_components() -> None:
    report = sample_report()
    about = replace(report.findings[0], about=("jaxlib", "not-installed"))
    report = replace(report, findings=(about, *report.findings[1:]))
    document = bom(report)
    properties = {p["name"]: p["value"] for p in document["metadata"]["properties"]}
    assert properties["envaudit:verdict"] == report.verdict
    refs = {c["bom-ref"]: c for c in _all_components(document)}
    annotations = document["annotations"]
    assert len(annotations) == len(report.findings)
    for f, note in zip(report.findings, annotations, strict=True):
        assert f.id in note["text"] and f.title in note["text"]
        assert all(s in refs for s in note["subjects"])  # each subject is an object of this BOM
        assert note["annotator"]["component"]["name"] == "envaudit"
        assert note["timestamp"] == document["metadata"]["timestamp"]
    assert [refs[s]["name"] for s in annotations[0]["subjects"]] == ["jaxlib"]
    assert annotations[1]["subjects"] == [document["metadata"]["component"]["bom-ref"]]  # about the environment


def test_without_a_timestamp_the_findings_are_properties() -> None:
    document = bom(replace(sample_report(), created="last tuesday"))
    assert "annotations" not in document and "timestamp" not in document["metadata"]
    said = [p["value"] for p in document["metadata"]["properties"] if p["name"] == "envaudit:finding"]
    assert [s.split(": ")[1] for s in said] == [f.id for f in sample_report().findings]


def test_the_requirements_between_packages_are_its_dependencies() -> None:
    report = h200()
    document = bom(report)
    by_ref = {c["bom-ref"]: c["name"] for c in document["components"]}
    graph = {by_ref[d["ref"]]: {by_ref[r] for r in d["dependsOn"]} for d in document["dependencies"]}
    for name, requirements in report.facts.requires.items():
        named = {canonicalize_name(re.split(r"[\s\[<>=!~;(@]", r, maxsplit=1)[0]) for r in requirements}
        assert graph[name] == named & report.facts.packages.keys() - {name}


def test_a_report_without_findings_or_packages_is_still_a_bom() -> None:
    document = bom(Report(facts_from({}), created="2026-01-01T00:00:00+00:00"))
    assert document["components"] == [] and "annotations" not in document
    assert document["metadata"]["timestamp"] == "2026-01-01T00:00:00Z"


def test_an_ignored_finding_says_so() -> None:
    ignored = Finding(Subject("rule", "r"), "warn", "t", ignored="accepted")
    document = bom(replace(sample_report(), findings=(ignored,)))
    assert "accepted" in document["annotations"][0]["text"]
