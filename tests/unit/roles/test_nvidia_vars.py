"""kunpeng.vllm.nvidia stops in preflight, before any change, on a bad runfile.

The decisions themselves (adopt / too_old / install, package names per
branch, repository URLs, runfile names, the report) are plain Python, tested
in tests/unit/plugins/module_utils/plan/test_nvidia_plan.py and
tests/unit/plugins/modules/test_nvidia_plan_module.py.  Here the whole role
runs in check mode on the controller, twice: once for a refusal the
decision module makes (a runfile for the other architecture) and once for
the check that needs a file (the runfile's checksum on the controller).  The
probe reads the real H200 PCI tree with no nvidia-smi; the repository URL is
a closed local port, so nothing can be fetched.
"""

import hashlib
import os
import re
import stat

import pytest
from playbook_run import run_playbook
from conftest import FIXTURES

H200 = os.path.join(FIXTURES, "nvidia", "h200")  # decoded copy (PCI bus ids restored)
MIRROR = "http://127.0.0.1:9/nvidia/cuda/repos"  # closed port: nothing can be fetched
OPENEULER_AARCH64 = {
    "distribution": "openEuler",
    "distribution_version": "24.03",
    "distribution_major_version": "24",
    "os_family": "RedHat",
    "architecture": "aarch64",
    "kernel": "6.6.0-72.0.0.76.oe2403sp1.aarch64",
    "service_mgr": "systemd",
}


@pytest.fixture()
def probe_without_driver(tmp_path):
    """Probe options: the H200's PCI bus, no nvidia-smi, no loaded module."""
    (tmp_path / "bin").mkdir()
    (tmp_path / "proc").mkdir()
    return {"tool_path": [str(tmp_path / "bin")], "tool_path_only": True, "procfs_root": str(tmp_path / "proc"),
            "sysfs_root": os.path.join(H200, "sysfs")}


def apply(collections_path, tmp_path, probe_options, **role_vars):
    extra = {
        "facts": OPENEULER_AARCH64,
        "nvidia_probe_options": probe_options,
        "nvidia_cuda_repo_base_url": MIRROR,
        "nvidia_env_file": str(tmp_path / "etc" / "nvidia.env"),
    }
    extra.update(role_vars)
    proc = run_playbook(collections_path, "nvidia_apply.yml", extra, "--check")
    return proc, proc.stdout + proc.stderr


def assert_stopped_in_preflight(proc, output, message):
    assert proc.returncode != 0, output
    assert message in output, output
    assert re.search(r"localhost\s+: ok=\d+\s+changed=0\s+unreachable=0\s+failed=1", output), output
    tasks = [line for line in output.splitlines() if line.startswith("TASK [")]
    # The failing task is the last one that ran, and it is a check.
    assert tasks[-1].startswith(("TASK [kunpeng.vllm.nvidia : Check", "TASK [kunpeng.vllm.nvidia : Fail")), tasks
    for later in ("repository", "Blacklist", "Install", "Copy the runfile", "Download", "Run the NVIDIA installer"):
        assert not [task for task in tasks if later in task], tasks


def runfile(tmp_path, name, content=b"#!/bin/sh\nexit 99\n"):
    path = tmp_path / name
    path.write_bytes(content)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path), hashlib.sha256(content).hexdigest()


def test_runfile_for_the_other_architecture_fails_before_any_change(collections_path, tmp_path, probe_without_driver):
    src, digest = runfile(tmp_path, "NVIDIA-Linux-x86_64-580.159.04.run")
    proc, output = apply(collections_path, tmp_path, probe_without_driver, nvidia_runfile_src=src, nvidia_runfile_sha256=digest)
    assert_stopped_in_preflight(proc, output, "is for x86_64 but this host is aarch64: use NVIDIA-Linux-aarch64-<version>.run")


def test_runfile_with_a_wrong_checksum_fails_before_any_change(collections_path, tmp_path, probe_without_driver):
    src, digest = runfile(tmp_path, "NVIDIA-Linux-aarch64-580.159.04.run")
    wrong = hashlib.sha256(b"something else").hexdigest()
    proc, output = apply(collections_path, tmp_path, probe_without_driver, nvidia_runfile_src=src, nvidia_runfile_sha256=wrong)
    assert_stopped_in_preflight(proc, output, f"sha256 mismatch for {src}: expected {wrong}, the file on the controller has {digest}")
