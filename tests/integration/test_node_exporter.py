"""A real prometheus-node-exporter (Debian) serves the envaudit_ metrics that `envaudit health` writes.

The exporter listens on 127.0.0.1 (a free port) with only its textfile collector enabled, reading a temporary
directory; the test runs `envaudit health --prometheus-dir DIR`, scrapes /metrics over HTTP and parses it with
prometheus_client. Two concurrent writers must never leave a torn file: the files are read (and scraped) over and
over while they run, and every read must parse completely. The exporter is always stopped.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from tests.conftest import PYTHON, ROOT, envaudit_run
from tests.integration import _support

pytestmark = pytest.mark.integration

FAULT = ROOT / "tests" / "faults" / "conv_batch_scale"
PROM = "envaudit.prom"
REPORT = "envaudit-report.json"


@dataclass
class Exporter:
    url: str
    textfile_dir: Path
    log: Path

    def scrape(self) -> str:
        with urllib.request.urlopen(self.url, timeout=10) as response:
            body: bytes = response.read()
            return body.decode()

    def samples(self) -> list[Sample]:
        return [s for family in text_string_to_metric_families(self.scrape()) for s in family.samples]


def _value(samples: list[Sample], name: str, **labels: str) -> float:
    found = [s.value for s in samples if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())]
    assert len(found) == 1, f"{name}{labels}: {found}"
    return found[0]


def _health(
    directory: Path, *args: str, fault: bool = False, fault_dir: Path = FAULT, **extra: str
) -> subprocess.CompletedProcess[str]:
    path = [str(fault_dir)] if fault else []
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([*path, str(ROOT)]), **extra}
    return envaudit_run(PYTHON, "health", "--prometheus-dir", str(directory), *args, env=env, timeout=180)


def _start_exporter(binary: str, textfile_dir: Path, log: Path) -> tuple[subprocess.Popen[bytes], Exporter]:
    for _attempt in range(3):  # a port found free can be taken before the exporter binds it: try another
        port = _support.free_port()
        with log.open("ab") as out:
            proc = subprocess.Popen(
                [
                    binary,
                    "--collector.disable-defaults",
                    "--collector.textfile",
                    f"--collector.textfile.directory={textfile_dir}",
                    "--no-collector.systemd",
                    f"--web.listen-address=127.0.0.1:{port}",
                ],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        exp = Exporter(f"http://127.0.0.1:{port}/metrics", textfile_dir, log)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                if "node_textfile_scrape_error" in exp.scrape():
                    return proc, exp
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(0.1)
        _support.stop(proc)
    raise AssertionError(f"node exporter did not serve /metrics\n{_support.tail(log)}")


@pytest.fixture(scope="module")
def exporter() -> Iterator[Exporter]:
    binary = _support.ensure_programs(["prometheus-node-exporter"])["prometheus-node-exporter"]
    with tempfile.TemporaryDirectory(prefix="envaudit-nodeexp-") as tmp:
        textfile_dir = Path(tmp) / "textfile"
        textfile_dir.mkdir()
        proc, exp = _start_exporter(binary, textfile_dir, Path(tmp) / "exporter.log")
        try:
            yield exp
        finally:
            _support.stop(proc)
            leftover = _support.reap_tagged(str(textfile_dir))
            assert not leftover, f"processes left behind: {leftover}"


def test_served_metrics_match_the_audit(exporter: Exporter) -> None:
    before = time.time()
    proc = _health(exporter.textfile_dir, "--probe", "dense_chain")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("envaudit OK") and len(proc.stdout.rstrip("\n")) <= 80

    samples = exporter.samples()
    assert _value(samples, "node_textfile_scrape_error") == 0, _support.tail(exporter.log)
    assert _value(samples, "envaudit_verdict", verdict="ok") == 1
    assert _value(samples, "envaudit_verdict", verdict="fail") == 0
    assert _value(samples, "envaudit_findings", severity="fail") == 0
    assert _value(samples, "envaudit_probe_status", probe="dense_chain", status="pass") == 1
    assert _value(samples, "envaudit_probe_status", probe="dense_chain", status="fail") == 0
    stamp = _value(samples, "envaudit_last_run_timestamp_seconds")
    assert before - 5 <= stamp <= time.time() + 5, (before, stamp)
    jax_version = importlib.metadata.version("jax")
    assert _value(samples, "envaudit_package_info", package="jax", version=jax_version) == 1

    # Everything in the file is served, with the same values.
    written = [s for f in text_string_to_metric_families((exporter.textfile_dir / PROM).read_text()) for s in f.samples]
    served = {(s.name, tuple(sorted(s.labels.items()))): s.value for s in samples}
    assert written and all(served[(s.name, tuple(sorted(s.labels.items())))] == s.value for s in written)
    assert all(s.name.startswith("envaudit_") for s in written)

    report = json.loads((exporter.textfile_dir / REPORT).read_text())
    assert report["schema"] == "envaudit/report/v1" and report["verdict"] in ("ok", "warn")


def test_a_failing_audit_is_served_as_fail(exporter: Exporter) -> None:
    proc = _health(exporter.textfile_dir, "--probe", "conv_chain", fault=True)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    samples = exporter.samples()
    assert _value(samples, "node_textfile_scrape_error") == 0
    assert _value(samples, "envaudit_verdict", verdict="fail") == 1
    assert _value(samples, "envaudit_findings", severity="fail") >= 1
    assert _value(samples, "envaudit_probe_status", probe="conv_chain", status="fail") == 1


def test_one_wrong_device_of_four_is_served_by_device(exporter: Exporter) -> None:
    """Four CPU devices, device 2 made wrong: its series say so, the other three agree, and the dashboards' labels
    (probe, device, uuid, pci_bus_id) survive the exporter."""
    corrupt = FAULT.parent / "device_corrupt"
    proc = _health(
        exporter.textfile_dir,
        "--probe",
        "dense_chain",
        fault=True,
        fault_dir=corrupt,
        XLA_FLAGS="--xla_force_host_platform_device_count=4",
    )
    assert proc.returncode == 1 and "device-2" in proc.stdout, proc.stdout + proc.stderr
    samples = exporter.samples()
    assert _value(samples, "node_textfile_scrape_error") == 0
    for device in "0123":
        status = "wrong" if device == "2" else "agrees"
        assert _value(samples, "envaudit_device_probe_status", probe="dense_chain", device=device, status=status) == 1
        error = _value(samples, "envaudit_device_probe_rel_err", probe="dense_chain", device=device)
        assert (error > 1e-5) == (device == "2"), error
    labels = next(s.labels for s in samples if s.name == "envaudit_device_probe_status")
    assert {"probe", "device", "uuid", "pci_bus_id", "status"} <= set(labels)


def _families(text: str) -> set[str]:
    return {family.name for family in text_string_to_metric_families(text)}


def test_concurrent_writers_never_leave_a_torn_file(exporter: Exporter) -> None:
    directory = exporter.textfile_dir
    first = _health(directory, "--probe", "dense_chain")
    assert first.returncode == 0, first.stdout + first.stderr
    expected = _families((directory / PROM).read_text())

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [PYTHON, "-m", "envaudit", "health", "--prometheus-dir", str(directory), "--probe", "dense_chain"]
    writers = [subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
    reads = scrapes = 0
    deadline = time.monotonic() + 180
    try:
        while any(w.poll() is None for w in writers):
            assert time.monotonic() < deadline, "the writers did not finish"
            text = (directory / PROM).read_text()
            assert text.endswith("\n") and _families(text) == expected, f"torn {PROM} after {reads} reads"
            report = json.loads((directory / REPORT).read_text())
            assert report["schema"] == "envaudit/report/v1"
            reads += 1
            if reads % 20 == 0:
                samples = exporter.samples()
                assert _value(samples, "node_textfile_scrape_error") == 0
                assert _value(samples, "envaudit_verdict", verdict="ok") == 1
                scrapes += 1
    finally:
        for w in writers:
            if w.poll() is None:
                w.kill()
            w.communicate(timeout=30)
    assert [w.returncode for w in writers] == [0, 0]
    assert reads > 0
    # No temporary file is left behind for the collector to trip over.
    assert sorted(p.name for p in directory.iterdir()) == [REPORT, PROM]
    print(f"\n{reads} complete reads and {scrapes} scrapes while two writers ran")
