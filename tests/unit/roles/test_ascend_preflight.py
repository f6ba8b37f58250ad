"""kunpeng.vllm.ascend refuses a wrong package before it changes anything.

No NPU is reachable here: the host is replayed with the Molecule scenario's
sysfs double (8 x 0x19e5:0xd802, an Atlas A2 / 910B host), the probe is told
the CPU is aarch64, and the packages are small files named like Huawei's.
The preflight runs for real (ansible-playbook against localhost): the plan
tests show it accepts the right packages and orders them as Huawei's guides
require; the refusal tests apply the whole role in check mode and show that
it stops in the preflight, with a message naming the fix, before any task
that could change the host.
"""

import hashlib
import json
import os
import re
import shutil
import subprocess

import pytest
from playbook_run import run_playbook

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
MAKE_SYSFS = os.path.join(ROOT, "molecule", "ascend", "doubles", "make-sysfs.sh")
VERSIONS = os.path.join(ROOT, "tests", "unit", "fixtures", "ascend", "versions")

FACTS = {
    "distribution": "Debian",
    "distribution_version": "12.11",
    "distribution_major_version": "12",
    "os_family": "Debian",
    "kernel": "6.1.0-31-arm64",
}
V1 = {
    "driver": "Ascend-hdk-910b-npu-driver_24.1.rc1_linux-aarch64.run",
    "firmware": "Ascend-hdk-910b-npu-firmware_7.1.0.11.220.run",
    "toolkit": "Ascend-cann-toolkit_8.1.RC1_linux-aarch64.run",
    "kernels": "Ascend-cann-kernels-910b_8.1.RC1_linux-aarch64.run",
    "nnal": "Ascend-cann-nnal_8.1.RC1_linux-aarch64.run",
}
V2 = {
    "driver": "Ascend-hdk-910b-npu-driver_25.0.rc1.1_linux-aarch64.run",
    "firmware": "Ascend-hdk-910b-npu-firmware_7.7.0.1.231.run",
    "toolkit": "Ascend-cann-toolkit_8.2.RC1_linux-aarch64.run",
    "kernels": "Ascend-cann-910b-ops_8.2.RC1_linux-aarch64.run",
    "nnal": "Ascend-cann-nnal_8.2.RC1_linux-aarch64.run",
}
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


def install_v1_records(host):
    """Version files of an installed v1 stack (driver 24.1.rc1, firmware 7.1.0.11.220, CANN 8.1.RC1)."""
    ascend = host / "Ascend"
    for source, target in (("driver-version.info", "driver/version.info"),
                           ("firmware-version.info", "firmware/version.info"),
                           ("ascend_toolkit_install.info", "ascend-toolkit/latest/aarch64-linux/ascend_toolkit_install.info")):
        os.makedirs(os.path.dirname(ascend / target), exist_ok=True)
        shutil.copy(os.path.join(VERSIONS, source), ascend / target)
    shutil.copy(os.path.join(VERSIONS, "ascend_install.info"), host / "ascend_install.info")


def role_vars(host, packages):
    return {
        "facts": FACTS,
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


def plan(collections_path, host, packages):
    out = host / "plan.json"
    proc = run_playbook(collections_path, "ascend_preflight.yml", dict(role_vars(host, packages), out=str(out)))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(out.read_text())


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


def test_first_install_runs_driver_before_firmware(collections_path, host):
    result = plan(collections_path, host, add_packages(host, V1))
    assert result["series"] == "910b" and result["arch"] == "aarch64"
    assert result["plan"] == ["driver", "firmware", "toolkit", "kernels", "nnal"]
    assert result["wanted"] == {"driver": "24.1.rc1", "firmware": "7.1.0.11.220", "toolkit": "8.1.RC1",
                                "kernels": "8.1.RC1", "nnal": "8.1.RC1"}


def test_upgrade_runs_firmware_before_driver(collections_path, host):
    install_v1_records(host)
    result = plan(collections_path, host, add_packages(host, V2))
    assert result["installed"]["driver"] == "24.1.rc1" and result["installed"]["toolkit"] == "8.1.RC1"
    assert result["plan"] == ["firmware", "driver", "toolkit", "kernels", "nnal"]


def test_installed_versions_are_not_run_again(collections_path, host):
    install_v1_records(host)
    packages = add_packages(host, {key: V1[key] for key in ("driver", "firmware", "toolkit")})
    assert plan(collections_path, host, packages)["plan"] == []


def test_x86_64_driver_on_aarch64_host_is_refused(collections_path, host):
    packages = add_packages(host, dict(V1, driver="Ascend-hdk-910b-npu-driver_24.1.rc1_linux-x86-64.run"))
    message = refuse(collections_path, host, packages)
    assert "ascend_packages.driver.file 'Ascend-hdk-910b-npu-driver_24.1.rc1_linux-x86-64.run' is the 910b x86_64 package" in message
    assert "series 910b (Ascend 910B) on aarch64" in message
    assert "Use the package named Ascend-hdk-910b-npu-driver_<version>_linux-aarch64.run" in message


def test_x86_64_toolkit_on_aarch64_host_is_refused(collections_path, host):
    packages = add_packages(host, {"toolkit": "Ascend-cann-toolkit_8.1.RC1_linux-x86_64.run"})
    message = refuse(collections_path, host, packages)
    assert "is the x86_64 package" in message
    assert "Use the package named Ascend-cann-toolkit_<version>_linux-aarch64.run" in message


def test_310p_packages_on_910b_host_are_refused(collections_path, host):
    packages = add_packages(host, dict(V1, kernels="Ascend-cann-kernels-310p_8.1.RC1_linux-aarch64.run"))
    message = refuse(collections_path, host, packages)
    assert "'Ascend-cann-kernels-310p_8.1.RC1_linux-aarch64.run' is the 310p aarch64 package" in message
    assert ("Use the package named Ascend-cann-kernels-910b_<version>_linux-aarch64.run"
            " or Ascend-cann-910b-ops_<version>_linux-aarch64.run") in message
    packages = add_packages(host, {"firmware": "Ascend-hdk-310p-npu-firmware_7.1.0.11.220.run"})
    message = refuse(collections_path, host, packages)
    assert "is the 310p package" in message and "Ascend-hdk-910b-npu-firmware_<version>.run" in message


def test_checksum_mismatch_is_refused(collections_path, host):
    packages = add_packages(host, V1)
    real = packages["firmware"]["sha256"]
    packages["firmware"]["sha256"] = "0" * 64
    message = refuse(collections_path, host, packages)
    assert f"ascend_packages.firmware: sha256 of {host}/packages/{V1['firmware']} is {real}, expected {'0' * 64}" in message
    assert "download it again" in message and "Nothing was changed" in message


def test_missing_package_file_is_refused(collections_path, host):
    packages = add_packages(host, V1)
    os.remove(host / "packages" / V1["nnal"])
    message = refuse(collections_path, host, packages)
    assert f"{host}/packages/{V1['nnal']} does not exist on the controller" in message
