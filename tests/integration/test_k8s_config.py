"""scripts/k8s/: the node-problem-detector plugin config against NPD's custom-plugin protocol, the plugin script's
exit codes and output, and the DaemonSet manifest -- whose container script is run here, once, for real.

The protocol checked is the one of kubernetes/node-problem-detector pkg/custompluginmonitor (types/config.go and
plugin/plugin.go): the JSON fields and their types (Go's decoder ignores unknown keys, so a misspelt one would be
silently dropped: unknown keys fail here), durations in Go's syntax, a rule timeout not above the global timeout,
permanent rules naming a declared condition, exit 0 OK / 1 NonOK / anything else Unknown, stdout cut at
max_output_length.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped, unused-ignore]

from tests.conftest import PYTHON, ROOT
from tests.integration import _support

pytestmark = pytest.mark.integration

K8S = ROOT / "scripts" / "k8s"
NPD_CONFIG = K8S / "envaudit-npd.json"
PLUGIN = K8S / "envaudit-npd-plugin.sh"
DAEMONSET = K8S / "envaudit-daemonset.yaml"
NPD_PATCH = K8S / "npd-envaudit-patch.yaml"
FAULT = ROOT / "tests" / "faults" / "conv_batch_scale"
TEXTFILE_DIR = "/var/lib/node_exporter/textfile"

GLOBAL_KEYS = {
    "invoke_interval": str,
    "timeout": str,
    "max_output_length": int,
    "concurrency": int,
    "enable_message_change_based_condition_update": bool,
    "skip_initial_status": bool,
}
TOP_KEYS = {
    "plugin": str,
    "pluginConfig": dict,
    "source": str,
    "conditions": list,
    "rules": list,
    "metricsReporting": bool,
}
RULE_KEYS = {
    "type": str,
    "condition": str,
    "reason": str,
    "path": str,
    "args": list,
    "timeout": str,
    "invoke_interval": str,
}
CONDITION_KEYS = {"type": str, "reason": str, "message": str}
_GO_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_GO_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")


def go_duration(text: str) -> float:
    """Seconds in a Go ``time.ParseDuration`` string ("90s", "1m30s"); ValueError when Go would reject it."""
    parts = list(_GO_PART.finditer(text))
    if not parts or "".join(p.group(0) for p in parts) != text:
        raise ValueError(f"not a Go duration: {text!r}")
    return sum(float(p.group(1)) * _GO_UNITS[p.group(2)] for p in parts)


def _typed(obj: dict[str, Any], schema: Mapping[str, type], where: str, required: set[str]) -> None:
    assert set(obj) <= set(schema), f"{where}: unknown keys {set(obj) - set(schema)}"
    assert required <= set(obj), f"{where}: missing {required - set(obj)}"
    for key, value in obj.items():
        assert type(value) is schema[key], f"{where}.{key}: {type(value).__name__}, not {schema[key].__name__}"


@pytest.fixture(scope="module")
def npd() -> dict[str, Any]:
    config: dict[str, Any] = json.loads(NPD_CONFIG.read_text())
    return config


@pytest.fixture(scope="module")
def daemonset() -> dict[str, Any]:
    docs = [d for d in yaml.safe_load_all(DAEMONSET.read_text()) if d is not None]
    assert len(docs) == 1
    doc: dict[str, Any] = docs[0]
    return doc


@pytest.fixture(scope="module")
def npd_patch() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(NPD_PATCH.read_text())
    return doc


def test_npd_config_follows_the_plugin_protocol(npd: dict[str, Any]) -> None:
    _typed(npd, TOP_KEYS, "config", {"plugin", "pluginConfig", "source", "conditions", "rules"})
    assert npd["plugin"] == "custom" and npd["source"]
    glob = npd["pluginConfig"]
    _typed(glob, GLOBAL_KEYS, "pluginConfig", {"invoke_interval", "timeout", "max_output_length", "concurrency"})
    interval, timeout = go_duration(glob["invoke_interval"]), go_duration(glob["timeout"])
    assert 0 < timeout <= interval
    assert glob["max_output_length"] == 80
    assert glob["concurrency"] >= 1

    conditions = {}
    for i, cond in enumerate(npd["conditions"]):
        _typed(cond, CONDITION_KEYS, f"conditions[{i}]", set(CONDITION_KEYS))
        assert cond["type"] and cond["reason"] and cond["message"]
        conditions[cond["type"]] = cond
    assert "EnvAuditProblem" in conditions

    assert npd["rules"]
    for i, rule in enumerate(npd["rules"]):
        _typed(rule, RULE_KEYS, f"rules[{i}]", {"type", "reason", "path"})
        assert rule["type"] in ("temporary", "permanent")
        if rule["type"] == "permanent":
            assert rule["condition"] in conditions, "a permanent rule needs a default condition of its type"
            assert rule["reason"] != conditions[rule["condition"]]["reason"], "the failure reason must differ"
        assert Path(rule["path"]).is_absolute()
        assert all(isinstance(a, str) for a in rule.get("args", []))
        if "timeout" in rule:
            assert go_duration(rule["timeout"]) <= timeout, "NPD refuses a rule timeout above the global one"
    assert any(r["type"] == "permanent" and r["condition"] == "EnvAuditProblem" for r in npd["rules"])


def test_go_duration_parser() -> None:
    assert go_duration("1m30s") == 90 and go_duration("500ms") == 0.5 and go_duration("1.5h") == 5400
    for bad in ("60", "1 m", "s", "", "10sec"):
        with pytest.raises(ValueError):
            go_duration(bad)


def test_rule_path_exists_in_the_described_layout(npd: dict[str, Any], npd_patch: dict[str, Any]) -> None:
    """The NPD patch mounts a ConfigMap holding this directory's files where the config says they are."""
    spec = npd_patch["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    mounts = {m["name"]: m for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in spec["volumes"]}
    cm_volume = next(v for v in volumes.values() if "configMap" in v)
    cm_mount = mounts[cm_volume["name"]]
    items = {item["path"]: item["key"] for item in cm_volume["configMap"]["items"]}
    assert all(key == path for path, key in items.items())  # created with --from-file=<file name>
    assert cm_volume["configMap"]["defaultMode"] & 0o111, "the plugin must be executable"
    files_in_image = {f"{cm_mount['mountPath']}/{path}": K8S / path for path in items}
    for path, source in files_in_image.items():
        assert source.is_file(), f"{path} comes from {source}, which does not exist"
    flag = f"--config.custom-plugin-monitor={cm_mount['mountPath']}/{NPD_CONFIG.name}"
    assert flag in container["command"]
    for rule in npd["rules"]:
        assert rule["path"] in files_in_image, f"{rule['path']} is not in {sorted(files_in_image)}"
        assert os.access(files_in_image[rule["path"]], os.X_OK)
        status_dir = str(Path(rule["args"][0]).parent)
        host = next(v["hostPath"]["path"] for v in volumes.values() if "hostPath" in v)
        status_mount = next(m for m in container["volumeMounts"] if m["mountPath"] == status_dir)
        assert host == status_dir == TEXTFILE_DIR and status_mount["readOnly"] is True


def _status(tmp_path: Path, rc: int | str, line: str, age: float = 0) -> Path:
    path = tmp_path / "envaudit-health.status"
    path.write_text(f"{rc} {int(time.time() - age)}\n{line}\n")
    return path


def _plugin(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(PLUGIN), *args], capture_output=True, text=True, timeout=30)


@pytest.mark.parametrize(
    ("rc", "line", "age", "want_rc", "want_out"),
    [
        (0, "envaudit OK: 0 fail, 0 warn; 7/7 probes pass", 0, 0, "envaudit OK: 0 fail, 0 warn; 7/7 probes pass"),
        (1, "envaudit FAIL probe-conv-chain: probe conv_chain computed a wrong answer", 0, 1, "envaudit FAIL"),
        (2, "", 0, 2, ""),
        (3, "envaudit ERROR: the audit could not complete", 0, 2, "envaudit ERROR"),
        (0, "envaudit OK: 0 fail, 0 warn; 7/7 probes pass", 3600, 2, "envaudit: last result is"),
        ("x", "garbage", 0, 2, "envaudit: unreadable status file"),
        (1, "y" * 200, 0, 1, "y" * 80),
    ],
)
def test_plugin_exit_codes_and_output(
    tmp_path: Path, rc: int | str, line: str, age: float, want_rc: int, want_out: str
) -> None:
    proc = _plugin(str(_status(tmp_path, rc, line, age)), "900")
    assert proc.returncode == want_rc, proc
    out = proc.stdout.rstrip("\n")
    assert out.startswith(want_out) and len(out) <= 80 and "\n" not in out, out


def test_plugin_without_a_result_is_unknown(tmp_path: Path) -> None:
    proc = _plugin(str(tmp_path / "nothing-here.status"))
    assert proc.returncode == 2 and proc.stdout.startswith("envaudit: no result yet")


def _container(daemonset: dict[str, Any]) -> dict[str, Any]:
    (container,) = daemonset["spec"]["template"]["spec"]["containers"]
    result: dict[str, Any] = container
    return result


def test_daemonset_has_what_it_needs(daemonset: dict[str, Any]) -> None:
    assert daemonset["apiVersion"] == "apps/v1" and daemonset["kind"] == "DaemonSet"
    assert daemonset["metadata"]["name"] and daemonset["metadata"]["namespace"]
    spec = daemonset["spec"]
    labels = spec["template"]["metadata"]["labels"]
    assert spec["selector"]["matchLabels"].items() <= labels.items()
    pod = spec["template"]["spec"]
    assert pod["runtimeClassName"] == "nvidia"
    container = _container(daemonset)
    env = {e["name"]: e.get("value") for e in container["env"]}
    gpu_limit = container.get("resources", {}).get("limits", {}).get("nvidia.com/gpu")
    assert env.get("NVIDIA_VISIBLE_DEVICES") == "all" or gpu_limit, "the pod must see the GPUs"
    assert env["ENVAUDIT_TEXTFILE_DIR"] == TEXTFILE_DIR
    assert int(env["ENVAUDIT_INTERVAL_S"]) > 0
    assert any(t.get("key") == "nvidia.com/gpu" for t in pod.get("tolerations", []))

    script = container["args"][0]
    assert container["command"][:2] == ["/bin/sh", "-c"] and len(container["args"]) == 1
    assert "health --prometheus-dir" in script and '--status-file "$status"' in script
    assert 'status="$dir/envaudit-health.status"' in script
    # Every variable the script reads (except the test-only one-shot switch) is declared in the manifest.
    used = set(re.findall(r"\$\{?(ENVAUDIT_[A-Z_]+|NODE_NAME)", script)) - {"ENVAUDIT_ONESHOT"}
    assert used <= set(env), used - set(env)

    (mount,) = [m for m in container["volumeMounts"] if m["mountPath"] == TEXTFILE_DIR]
    volume = next(v for v in pod["volumes"] if v["name"] == mount["name"])
    assert volume["hostPath"]["path"] == TEXTFILE_DIR and not mount.get("readOnly", False)


def _run_container_script(
    daemonset: dict[str, Any], directory: Path, fault: bool, cwd: Path | None = None, health_args: str | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the DaemonSet's container script once, here, with the manifest's environment (paths pointed at tmp),
    started in `cwd` (the image's WORKDIR) if given."""
    container = _container(daemonset)
    env = {e["name"]: e["value"] for e in container["env"] if "value" in e}
    if health_args is None:
        health_args = "--probe conv_chain" if fault else "--probe dense_chain"
    env.update(
        ENVAUDIT_CMD=f"{PYTHON} -m envaudit",
        ENVAUDIT_HEALTH_ARGS=health_args,
        ENVAUDIT_TEXTFILE_DIR=str(directory),
        ENVAUDIT_ONESHOT="1",
        NODE_NAME="ci-node",
        PATH=os.environ.get("PATH", "/usr/bin:/bin"),
        PYTHONPATH=os.pathsep.join([*([str(FAULT)] if fault else []), str(ROOT)]),
    )
    return subprocess.run(
        [*container["command"], container["args"][0]], env=env, capture_output=True, text=True, timeout=180, cwd=cwd
    )


@pytest.mark.parametrize("fault", [False, True], ids=["healthy", "faulty"])
def test_daemonset_script_feeds_metrics_and_the_npd_plugin(
    daemonset: dict[str, Any], npd: dict[str, Any], tmp_path: Path, fault: bool
) -> None:
    proc = _run_container_script(daemonset, tmp_path, fault)
    assert proc.returncode == (1 if fault else 0), proc
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "envaudit-health.status",
        "envaudit-report.json",
        "envaudit.prom",
    ]
    assert json.loads((tmp_path / "envaudit-report.json").read_text())["verdict"] == ("fail" if fault else "ok")
    # The plugin, as NPD would call it (the rule's arguments, the status file moved to tmp).
    (rule,) = [r for r in npd["rules"] if r.get("condition") == "EnvAuditProblem"]
    plugin = _plugin(str(tmp_path / Path(rule["args"][0]).name), *rule["args"][1:])
    assert plugin.returncode == (1 if fault else 0), plugin
    line = plugin.stdout.rstrip("\n")
    assert len(line) <= npd["pluginConfig"]["max_output_length"]
    assert line.startswith("envaudit FAIL" if fault else "envaudit OK"), line
    assert f"rc={plugin.returncode} {line}" in proc.stdout


def test_daemonset_script_runs_the_installed_envaudit_whatever_its_working_directory(
    daemonset: dict[str, Any], tmp_path: Path
) -> None:
    """The container starts in the image's WORKDIR, often the jobs' code. With `python -m envaudit` as ENVAUDIT_CMD,
    an envaudit/ package there was first on sys.path and answered for the node: its OK in the status file, and the
    NPD plugin said OK. The installed envaudit, given an option it does not know, exits 2 (no audit, no jax)."""
    workdir = tmp_path / "workdir" / "envaudit"
    workdir.mkdir(parents=True)
    marker = tmp_path / "forged-ran"
    (workdir / "__init__.py").write_text("")
    (workdir / "__main__.py").write_text(f"open({str(marker)!r}, 'w').close()\nprint('envaudit OK: forged')\n")
    textfile = tmp_path / "textfile"
    textfile.mkdir()

    proc = _run_container_script(daemonset, textfile, False, cwd=workdir.parent, health_args="--no-such-option")

    assert not marker.exists() and "forged" not in proc.stdout, proc
    assert proc.returncode == 2, proc
    plugin = _plugin(str(textfile / "envaudit-health.status"))
    assert plugin.returncode == 2, plugin  # Unknown: the node's health was not measured


def test_a_run_without_a_verdict_writes_its_own_status_and_one_that_cannot_start_gets_the_scripts(
    daemonset: dict[str, Any], tmp_path: Path
) -> None:
    """envaudit writes the status file itself (--status-file), a run that ends without a verdict too, with why; one
    that cannot even start (arguments it refuses) leaves none, and the script writes its exit code there instead:
    the plugin says Unknown at once either way, never the last run's result."""
    for args, said in (("--probe no_such_probe", "envaudit ERROR: no probe 'no_such_probe'"), ("--no-such-option", "")):
        _status(tmp_path, 0, "envaudit OK: the last run's", age=60)
        proc = _run_container_script(daemonset, tmp_path, False, health_args=args)
        assert proc.returncode == 2, proc
        plugin = _plugin(str(tmp_path / "envaudit-health.status"))
        assert (plugin.returncode, plugin.stdout.rstrip("\n")[: len(said) or None]) == (2, said), plugin


def test_shell_scripts_are_shellcheck_clean(daemonset: dict[str, Any], tmp_path: Path) -> None:
    shellcheck = _support.ensure_programs(["shellcheck"])["shellcheck"]
    inline = tmp_path / "daemonset-container.sh"
    inline.write_text("#!/bin/sh\n" + _container(daemonset)["args"][0])
    scripts = [*sorted((ROOT / "scripts" / "slurm").glob("*.sh")), *sorted(K8S.glob("*.sh")), inline]
    proc = subprocess.run([shellcheck, *map(str, scripts)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
