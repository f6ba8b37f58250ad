"""kunpeng.vllm.base resolves the right platform data on every supported OS.

Only Debian 12 containers run here, so these tests resolve the role's
variables (tasks/set_vars.yml: support check + most-specific vars file) for
made-up facts of each platform with a real ansible-playbook run, and check that
argument_specs stops a wrongly typed variable before anything changes.
"""

import json
import os
import re

import pytest
from playbook_run import run_playbook

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

# Facts the role reads (vars/main.yml __base_required_facts), per platform.
PLATFORMS = {
    "openEuler 22.03": {
        "distribution": "openEuler",
        "distribution_version": "22.03",
        "distribution_major_version": "22",
        "distribution_release": "LTS-SP4",
        "os_family": "RedHat",
        "pkg_mgr": "dnf",
    },
    "openEuler 24.03": {
        "distribution": "openEuler",
        "distribution_version": "24.03",
        "distribution_major_version": "24",
        "distribution_release": "LTS-SP1",
        "os_family": "RedHat",
        "pkg_mgr": "dnf",
    },
    "Ubuntu 22.04": {
        "distribution": "Ubuntu",
        "distribution_version": "22.04",
        "distribution_major_version": "22",
        "distribution_release": "jammy",
        "os_family": "Debian",
        "pkg_mgr": "apt",
    },
    "Ubuntu 24.04": {
        "distribution": "Ubuntu",
        "distribution_version": "24.04",
        "distribution_major_version": "24",
        "distribution_release": "noble",
        "os_family": "Debian",
        "pkg_mgr": "apt",
    },
    "Debian 12": {
        "distribution": "Debian",
        "distribution_version": "12.11",
        "distribution_major_version": "12",
        "distribution_release": "bookworm",
        "os_family": "Debian",
        "pkg_mgr": "apt",
    },
}
UNSUPPORTED = {
    "Fedora 40": {
        "distribution": "Fedora",
        "distribution_version": "40",
        "distribution_major_version": "40",
        "distribution_release": "",
        "os_family": "RedHat",
        "pkg_mgr": "dnf",
    },
    "Alpine 3.20": {
        "distribution": "Alpine",
        "distribution_version": "3.20.3",
        "distribution_major_version": "3",
        "distribution_release": "",
        "os_family": "Alpine",
        "pkg_mgr": "apk",
    },
    "Ubuntu 20.04": {
        "distribution": "Ubuntu",
        "distribution_version": "20.04",
        "distribution_major_version": "20",
        "distribution_release": "focal",
        "os_family": "Debian",
        "pkg_mgr": "apt",
    },
}
COMMON = {
    "kernel": "6.6.0-28.0.0.34.oe2403.aarch64",
    "architecture": "aarch64",
    "service_mgr": "systemd",
    "virtualization_type": "kvm",
    "virtualization_role": "host",
}


def resolve(collections_path, tmp_path, facts):
    out = tmp_path / "resolved.json"
    proc = run_playbook(collections_path, "resolve_vars.yml", {"facts": dict(COMMON, **facts), "out": str(out)})
    return proc, (json.loads(out.read_text()) if proc.returncode == 0 else None)


@pytest.mark.parametrize("platform", sorted(PLATFORMS))
def test_supported_platform_resolves(collections_path, tmp_path, platform):
    proc, resolved = resolve(collections_path, tmp_path, PLATFORMS[platform])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    facts = PLATFORMS[platform]
    assert resolved["pkg_mgr"] == facts["pkg_mgr"]
    packages = set(resolved["packages"])
    assert {"gcc", "make", "cmake", "python3", "numactl", "pciutils", "git", "curl", "ca-certificates"} <= packages
    assert resolved["driver_packages"] == ["dkms"]
    if facts["distribution"] == "openEuler":
        assert {"gcc-c++", "python3-devel", "numactl-libs", "numactl-devel"} <= packages
        assert not {"python3-dev", "libnuma1", "python3-venv"} & packages
        assert resolved["kernel_headers_package"] == "kernel-devel-" + COMMON["kernel"]
        assert resolved["ca_anchor_dir"] == "/etc/pki/ca-trust/source/anchors"
        assert resolved["ca_update_command"] == ["update-ca-trust", "extract"]
        assert resolved["ca_bundle"] == "/etc/pki/tls/certs/ca-bundle.crt"
        assert resolved["nologin_shell"] == "/sbin/nologin"
        assert resolved["chrony_service"] == "chronyd"
        assert resolved["firewall"] == "firewalld"
        assert resolved["apt_keyring"] is None
    else:
        assert {"g++", "python3-dev", "python3-venv", "libnuma1"} <= packages
        assert not {"python3-devel", "numactl-libs"} & packages
        assert resolved["kernel_headers_package"] == "linux-headers-" + COMMON["kernel"]
        assert resolved["ca_anchor_dir"] == "/usr/local/share/ca-certificates"
        assert resolved["ca_update_command"] == ["update-ca-certificates"]
        assert resolved["ca_bundle"] == "/etc/ssl/certs/ca-certificates.crt"
        assert resolved["nologin_shell"] == "/usr/sbin/nologin"
        assert resolved["chrony_service"] == "chrony"
        assert resolved["firewall"] == "ufw"
        release = facts["distribution_release"]
        assert resolved["apt_default_suites"][:2] == [release, release + "-updates"]
        if facts["distribution"] == "Ubuntu":
            assert resolved["apt_keyring"] == "/usr/share/keyrings/ubuntu-archive-keyring.gpg"
            assert resolved["apt_default_suites"][2:] == [release + "-security"]
            assert resolved["apt_default_components"] == ["main", "universe"]
        else:
            assert resolved["apt_keyring"] == "/usr/share/keyrings/debian-archive-keyring.gpg"
            assert resolved["apt_default_suites"][2:] == []
            assert resolved["apt_default_components"] == ["main"]


@pytest.mark.parametrize("platform", sorted(UNSUPPORTED))
def test_unsupported_platform_fails_listing_supported(collections_path, tmp_path, platform):
    proc, dummy = resolve(collections_path, tmp_path, UNSUPPORTED[platform])
    assert proc.returncode != 0
    output = proc.stdout + proc.stderr
    facts = UNSUPPORTED[platform]
    assert f"does not support {facts['distribution']} {facts['distribution_version']}" in output, output
    assert "Supported platforms: Debian 12, Ubuntu 22.04/24.04, openEuler 22.03/24.03" in output, output


def test_wrong_variable_type_fails_before_any_change(collections_path):
    proc = run_playbook(collections_path, "validate_args.yml", {"base_firewall_ports": "eighty"}, "--check")
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0, output
    assert "Validation of arguments failed" in output and "'base_firewall_ports'" in output, output
    # The validation is the first and only task that ran: nothing was gathered,
    # nothing changed.
    tasks = [line for line in output.splitlines() if line.startswith("TASK [")]
    assert len(tasks) == 1 and "Validating arguments against arg spec 'main'" in tasks[0], tasks
    assert re.search(r"localhost\s+: ok=0\s+changed=0\s+unreachable=0\s+failed=1", output), output
