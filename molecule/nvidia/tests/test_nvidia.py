"""kunpeng.vllm.nvidia installed, adopted, refused and upgraded drivers from a repository of package doubles.

The container has no GPU and no NVIDIA software: /opt/kv-repo is a local apt
repository of test-double packages with the real CUDA-repository names
(molecule/nvidia/files/build-repo.sh), whose driver packages install an
nvidia-smi double replaying the real H200 capture with their own version.
"""

import json
import os

import pytest

ENV_FILE = "/etc/vllm/nvidia.env"


def load(host, run):
    path = os.path.join(os.environ["KV_NVIDIA_REPORT_DIR"], f"{host.backend.get_hostname()}-{run}.json")
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


@pytest.fixture(scope="module")
def installed(host):
    return load(host, "install")


def version_of(host, package):
    result = host.run(f"dpkg-query -W -f '${{Status}} ${{Version}}' {package}")
    return result.stdout.split()[-1] if result.rc == 0 and "install ok installed" in result.stdout else None


def test_first_install_from_the_repository(installed):
    nvidia = installed["kunpeng_nvidia"]
    assert nvidia["action"] == "install" and nvidia["source"] == "cuda_repo" and nvidia["adopted"] is False
    assert nvidia["driver_version"] == "580.159.04" and nvidia["kernel_module"] == "open" and nvidia["gpu_count"] == 1
    # Installed, and this run did not reboot (nvidia_reboot is false).
    assert nvidia["reboot_pending"] is True
    assert nvidia["services_managed"] is True
    assert nvidia["env_file"] == ENV_FILE


def test_second_run_adopted_what_the_first_installed(host):
    nvidia = load(host, "last")["kunpeng_nvidia"]
    assert nvidia["action"] == "adopt" and nvidia["adopted"] is True and nvidia["reboot_pending"] is False


def test_repository_source_is_the_local_test_repository(host):
    source = host.file("/etc/apt/sources.list.d/kunpeng-vllm-cuda.sources").content_string
    assert "URIs: file:///opt/kv-repo/debian12/" in source and "Trusted: yes" in source
    # Written by ansible.builtin.deb822_repository over the file 0.2.0's template left (prepare.yml): one source.
    assert "X-Repolib-Name: kunpeng-vllm-cuda" in source and "flat repository" not in source
    listing = host.check_output("grep -rl 'kv-repo' /etc/apt/sources.list /etc/apt/sources.list.d || true")
    assert listing.split() == ["/etc/apt/sources.list.d/kunpeng-vllm-cuda.sources"]
    assert not host.file("/etc/apt/keyrings/kunpeng-vllm-cuda.asc").exists
    assert host.file("/etc/modprobe.d/blacklist-nouveau.conf").contains("blacklist nouveau")


def test_wrong_architecture_runfile_was_refused_in_preflight(host):
    refusal = load(host, "refusal")
    assert refusal["task"] == "Check the request against the decision's refusals"
    assert "but this host is" in refusal["msg"] and "Nothing was changed." in refusal["msg"]
    assert not host.file("/var/cache/kunpeng-vllm/nvidia").exists


def test_branch_upgrade_switches_to_the_unsuffixed_packages(host):
    upgrade = load(host, "upgrade")
    assert upgrade["changed"] is True and upgrade["pinning_changed"] is True
    nvidia = upgrade["kunpeng_nvidia"]
    assert nvidia["driver_version"] == "590.48.01" and nvidia["action"] == "install" and nvidia["reboot_pending"] is True
    assert version_of(host, "nvidia-driver-pinning-590") == "590.48.01-1"
    assert version_of(host, "nvidia-open") == "590.48.01-1"
    assert version_of(host, "nvidia-open-580") is None
    out = host.check_output("nvidia-smi --query-gpu=name,driver_version --format=csv,noheader,nounits")
    assert "NVIDIA H200" in out and "590.48.01" in out


def test_environment_file_for_services(host):
    env = host.file(ENV_FILE)
    assert env.is_file
    assert (env.user, env.group, env.mode) == ("root", "root", 0o644)
    lines = [line for line in env.content_string.splitlines() if line and not line.startswith("#")]
    assert dict(line.split("=", 1) for line in lines) == {
        "CUDA_HOME": "/usr/local/cuda",
        "PATH": "/usr/local/cuda/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "LD_LIBRARY_PATH": "/usr/local/cuda/lib64",
    }


def test_systemd_unit_gets_the_cuda_environment(host):
    """What the vllm unit sees through EnvironmentFile= (vllm_environment_files)."""
    out = host.check_output(f"systemd-run --quiet --wait --pipe -p EnvironmentFile={ENV_FILE} /usr/bin/env")
    env = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
    assert env["PATH"].split(":")[0] == "/usr/local/cuda/bin"
    assert env["LD_LIBRARY_PATH"] == "/usr/local/cuda/lib64"
    assert env["CUDA_HOME"] == "/usr/local/cuda"
