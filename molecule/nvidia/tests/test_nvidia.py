"""kunpeng.vllm.nvidia adopted the (test double) H200 driver and touched nothing else.

The container has no GPU: /opt/kv-doubles holds a test-double nvidia-smi that
replays the real H200 capture, with the captured procfs and PCI tree.
"""

import json
import os

import pytest

ENV_FILE = "/etc/vllm/nvidia.env"


@pytest.fixture(scope="module")
def report(host):
    path = os.path.join(os.environ["KV_NVIDIA_REPORT_DIR"], host.backend.get_hostname() + ".json")
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def test_double_replays_the_h200_capture(host):
    out = host.check_output("/opt/kv-doubles/bin/nvidia-smi --query-gpu=name,driver_version --format=csv,noheader,nounits")
    assert "NVIDIA H200" in out and "580.159.04" in out
    assert not host.exists("nvidia-smi"), "a real nvidia-smi on PATH would make this test meaningless"


def test_driver_was_adopted_as_found(report):
    nvidia = report["kunpeng_nvidia"]
    assert nvidia["adopted"] is True
    assert nvidia["action"] == "adopt"
    assert nvidia["source"] == "adopted"
    assert nvidia["driver_version"] == "580.159.04"
    assert nvidia["kernel_module"] == "open"
    assert nvidia["gpu_count"] == 1
    assert nvidia["env_file"] == ENV_FILE
    assert nvidia["cuda_home"] == "/usr/local/cuda"
    assert nvidia["reboot_pending"] is False
    # An adopted driver's services are left as found.
    assert nvidia["services_managed"] is False
    assert report["summary"]["driver_ready"] is True
    assert report["summary"]["problems"] == []


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


def test_nothing_was_installed_or_configured(host):
    packages = host.run("dpkg-query -W -f '${Package}\\n' 'nvidia*' 'cuda*' 'dkms' 'linux-headers-*'")
    assert packages.stdout.strip() == "", packages.stdout
    for path in (
        "/etc/modprobe.d/blacklist-nouveau.conf",
        "/etc/apt/sources.list.d/kunpeng-vllm-cuda.sources",
        "/etc/apt/keyrings/kunpeng-vllm-cuda.asc",
        "/etc/systemd/system/nvidia-persistenced.service",
        "/var/cache/kunpeng-vllm/nvidia",
    ):
        assert not host.file(path).exists, path
