"""kunpeng.vllm.ascend refuses a wrong package before it changes anything.

The decisions themselves (names, order, flags) are table-tested in
tests/unit/plugins/module_utils/plan/test_ascend_plan_tables.py and on probed hosts in
tests/unit/plugins/modules/test_ascend_plan.py.  These two playbook tests
show the wiring: the whole role, applied in check mode to a replayed host
(the Molecule scenario's sysfs double, 8 x 0x19e5:0xd802, an Atlas A2 /
910B host; the probe is told the CPU is aarch64), stops in the preflight
with a message naming the fix, before any task that could change the host.
"""

import hashlib
import json
import os
import re
import subprocess

import pytest
from conftest import FIXTURES
from playbook_run import run_playbook

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
MAKE_SYSFS = os.path.join(ROOT, "molecule", "ascend", "doubles", "make-sysfs.sh")

PLATFORM_FACTS = {
    "distribution": "Debian",
    "distribution_version": "12.11",
    "distribution_major_version": "12",
    "os_family": "Debian",
    "kernel": "6.1.0-31-arm64",
}
with open(os.path.join(FIXTURES, "ascend", "packages.json")) as _handle:
    V1 = json.load(_handle)["v1"]
# Tasks of the role that come after the preflight: none may run on a refusal.
LATER_TASKS = ("Create the run user", "Create the staging directory", "Copy the packages", "Run the installer")


@pytest.fixture
def host(tmp_path):
    """A replayed 910B host: sysfs double, no npu-smi, an empty Ascend prefix, a package dir."""
    subprocess.run(["sh", MAKE_SYSFS, str(tmp_path / "sys"), "0xd802", "8"], check=True)
    for name in ("bin", "Ascend", "packages"):
        (tmp_path / name).mkdir()
    return tmp_path


def add_packages(host, names):
    """Write stand-in package files; return ascend_packages with each file's sha256."""
    packages = {}
    for component, name in names.items():
        path = host / "packages" / name
        path.write_text(f"#!/bin/sh\n# stand-in for {name}\n")
        packages[component] = {"file": name, "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}
    return packages


def role_vars(host, packages):
    return {
        "facts": PLATFORM_FACTS,
        "ascend_packages": packages,
        "ascend_package_source": "controller",
        "ascend_package_dir": str(host / "packages"),
        "ascend_install_path": str(host / "Ascend"),
        "ascend_staging_dir": str(host / "staging"),
        "ascend_env_file": str(host / "ascend.env"),
        "ascend_driver_prereq_check": False,
        "ascend_probe_options": {
            "sysfs_root": str(host / "sys"),
            "tool_path": [str(host / "bin")],
            "tool_path_only": True,
            "architecture": "aarch64",
            "ascend_install_info": str(host / "ascend_install.info"),
        },
    }


def refuse(collections_path, host, packages):
    """Apply the whole role in check mode; it must fail in the preflight and change nothing."""
    proc = run_playbook(collections_path, "ascend_role.yml", role_vars(host, packages), "--check")
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0, output
    assert re.search(r"localhost\s+: ok=\d+\s+changed=0\s+unreachable=0\s+failed=1", output), output
    tasks = [line for line in output.splitlines() if line.startswith("TASK [")]
    assert not [task for task in tasks if any(later in task for later in LATER_TASKS)], tasks
    assert not (host / "staging").exists() and os.listdir(host / "Ascend") == []
    return " ".join(output.split())


def test_x86_64_driver_on_aarch64_host_is_refused(collections_path, host):
    packages = add_packages(host, dict(V1, driver="Ascend-hdk-910b-npu-driver_24.1.rc1_linux-x86-64.run"))
    message = refuse(collections_path, host, packages)
    assert "ascend_packages.driver.file 'Ascend-hdk-910b-npu-driver_24.1.rc1_linux-x86-64.run' is the 910b x86_64 package" in message
    assert "series 910b (Ascend 910B) on aarch64" in message
    assert "Use the package named Ascend-hdk-910b-npu-driver_<version>_linux-aarch64.run" in message


def test_checksum_mismatch_is_refused(collections_path, host):
    packages = add_packages(host, V1)
    real = packages["firmware"]["sha256"]
    packages["firmware"]["sha256"] = "0" * 64
    message = refuse(collections_path, host, packages)
    assert f"ascend_packages.firmware: sha256 of {host}/packages/{V1['firmware']} is {real}, expected {'0' * 64}" in message
    assert "download it again" in message and "Nothing was changed" in message
