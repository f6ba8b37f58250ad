"""kunpeng.vllm.nvidia picks the right repository, packages and action everywhere.

Only Debian 12 containers (without GPUs) run here, so these tests resolve the
role's plan (tasks/set_vars.yml + tasks/plan.yml) with a real ansible-playbook
run for made-up platform facts and made-up probe results, and apply the whole
role in check mode to show that a bad runfile or source stops the play before
any change.  Nothing contacts NVIDIA: the plan tasks have no network step, the
failing runs stop in preflight, and the repository URL points at a closed
local port.
"""

import copy
import hashlib
import json
import os
import re
import stat

import pytest
from playbook_run import run_playbook
from conftest import FIXTURES

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
# The decoded copy (PCI bus ids restored, see tests/unit/conftest.py).
H200 = os.path.join(FIXTURES, "nvidia", "h200")
H200_REAL_RUN = os.path.join(ROOT, "tests", "unit", "fixtures", "nvidia", "h200", "adopt")
MIRROR = "http://127.0.0.1:9/nvidia/cuda/repos"  # closed port: nothing can be fetched

PLATFORMS = {
    "Ubuntu 22.04": {
        "distribution": "Ubuntu",
        "distribution_version": "22.04",
        "distribution_major_version": "22",
        "os_family": "Debian",
    },
    "Ubuntu 24.04": {
        "distribution": "Ubuntu",
        "distribution_version": "24.04",
        "distribution_major_version": "24",
        "os_family": "Debian",
    },
    "Debian 12": {
        "distribution": "Debian",
        "distribution_version": "12.11",
        "distribution_major_version": "12",
        "os_family": "Debian",
    },
    "openEuler 22.03": {
        "distribution": "openEuler",
        "distribution_version": "22.03",
        "distribution_major_version": "22",
        "os_family": "RedHat",
    },
    "openEuler 24.03": {
        "distribution": "openEuler",
        "distribution_version": "24.03",
        "distribution_major_version": "24",
        "os_family": "RedHat",
    },
}
REPO_DISTRO = {
    "Ubuntu 22.04": "ubuntu2204",
    "Ubuntu 24.04": "ubuntu2404",
    "Debian 12": "debian12",
    "openEuler 22.03": "rhel9",
    "openEuler 24.03": "rhel9",
}
ARCHES = {"aarch64": "sbsa", "x86_64": "x86_64"}


def load_probe():
    """The accelerator_facts result replayed from the real H200 capture."""
    with open(os.path.join(H200, "expected.json"), encoding="utf-8") as handle:
        return json.load(handle)


def no_driver_probe(nvswitches=0):
    """An H200-like host before any driver: GPU on the PCI bus, no nvidia-smi."""
    probe = load_probe()
    probe["nvidia"].update(tool=None, driver_version=None, kernel_module=None, gpus=[], cuda_version=None)
    probe["nvidia"]["fabric_manager_required"] = nvswitches > 0
    probe["pci"]["nvswitch_count"] = nvswitches
    return probe


def facts_for(platform, arch, probe):
    return dict(
        PLATFORMS[platform],
        architecture=arch,
        kernel="6.8.0-79-generic",
        service_mgr="systemd",
        kunpeng_accelerators=probe,
    )


def plan(collections_path, tmp_path, platform, arch, probe=None, **role_vars):
    out = tmp_path / "plan.json"
    extra = {"facts": facts_for(platform, arch, probe or no_driver_probe()), "out": str(out), "nvidia_cuda_repo_base_url": MIRROR}
    extra.update(role_vars)
    proc = run_playbook(collections_path, "nvidia_plan.yml", extra)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(out.read_text())


@pytest.mark.parametrize("arch", sorted(ARCHES))
@pytest.mark.parametrize("platform", sorted(PLATFORMS))
def test_cuda_repository_url_and_key(collections_path, tmp_path, platform, arch):
    resolved = plan(collections_path, tmp_path, platform, arch, nvidia_driver_source="cuda_repo")
    repo = resolved["plan"]["repo"]
    expected = f"{MIRROR}/{REPO_DISTRO[platform]}/{ARCHES[arch]}/"
    assert repo["url"] == expected
    assert "/aarch64/" not in repo["url"]
    key = "D42D0685.pub" if platform.startswith("openEuler") else "3bf863cc.pub"
    assert repo["key_url"] == expected + key
    assert repo["wanted"] is True
    assert resolved["plan"]["action"] == "install"


def test_trailing_slash_of_the_mirror_url_is_ignored(collections_path, tmp_path):
    resolved = plan(collections_path, tmp_path, "Ubuntu 24.04", "aarch64", nvidia_cuda_repo_base_url="https://mirror.example/cuda/repos//")
    assert resolved["plan"]["repo"]["url"] == "https://mirror.example/cuda/repos/ubuntu2404/sbsa/"


@pytest.mark.parametrize(
    "platform, arch, source, module, packages",
    [
        ("Ubuntu 22.04", "aarch64", "cuda_repo", "open", ["nvidia-open-580"]),
        ("Ubuntu 24.04", "x86_64", "cuda_repo", "proprietary", ["cuda-drivers-580"]),
        ("Ubuntu 22.04", "x86_64", "distro", "open", ["nvidia-driver-580-server-open"]),
        ("Ubuntu 24.04", "aarch64", "distro", "proprietary", ["nvidia-driver-580-server"]),
        ("Debian 12", "x86_64", "cuda_repo", "open", ["nvidia-open-580"]),
        ("openEuler 24.03", "aarch64", "cuda_repo", "open", ["@nvidia-driver:580-open"]),
        ("openEuler 22.03", "x86_64", "cuda_repo", "proprietary", ["@nvidia-driver:580-dkms"]),
        ("openEuler 24.03", "aarch64", "runfile", "open", []),
    ],
)
def test_driver_packages_follow_source_and_kernel_module(collections_path, tmp_path, platform, arch, source, module, packages):
    resolved = plan(collections_path, tmp_path, platform, arch, nvidia_driver_source=source, nvidia_kernel_module=module)
    assert resolved["plan"]["source"] == source
    assert resolved["plan"]["driver_packages"] == packages
    # Without NVSwitch there is no Fabric Manager to install.
    assert resolved["plan"]["fabricmanager_packages"] == []
    assert resolved["plan"]["repo"]["wanted"] is (source == "cuda_repo")


@pytest.mark.parametrize(
    "platform, pkg_mgr, default_source, sources, headers, initramfs",
    [
        ("Ubuntu 24.04", "apt", "cuda_repo", ["cuda_repo", "distro", "runfile"], "linux-headers-", ["update-initramfs", "-u"]),
        ("Debian 12", "apt", "cuda_repo", ["cuda_repo", "runfile"], "linux-headers-", ["update-initramfs", "-u"]),
        ("openEuler 24.03", "dnf", "runfile", ["cuda_repo", "runfile"], "kernel-devel-", ["dracut", "-f"]),
    ],
)
def test_platform_defaults(collections_path, tmp_path, platform, pkg_mgr, default_source, sources, headers, initramfs):
    resolved = plan(collections_path, tmp_path, platform, "aarch64")
    assert resolved["pkg_mgr"] == pkg_mgr
    assert resolved["plan"]["source"] == default_source
    assert resolved["sources"] == sources
    assert resolved["kernel_headers_package"] == headers + "6.8.0-79-generic"
    assert resolved["initramfs_command"] == initramfs


@pytest.mark.parametrize(
    "platform, packages",
    [("Ubuntu 24.04", ["nvidia-fabricmanager-570"]), ("openEuler 24.03", ["nvidia-fabric-manager"])],
)
def test_fabric_manager_only_on_nvswitch_systems(collections_path, tmp_path, platform, packages):
    resolved = plan(collections_path, tmp_path, platform, "x86_64", no_driver_probe(nvswitches=4), nvidia_driver_source="cuda_repo", nvidia_driver_branch="570")
    assert resolved["plan"]["fabric_manager"] is True
    assert resolved["plan"]["fabricmanager_packages"] == packages


def test_toolkit_package_and_repository(collections_path, tmp_path):
    resolved = plan(
        collections_path, tmp_path, "Ubuntu 22.04", "aarch64", load_probe(), nvidia_cuda_toolkit_version="13.0", nvidia_cuda_home=str(tmp_path / "cuda")
    )
    # The driver is adopted, but the toolkit still needs the CUDA repository.
    assert resolved["plan"]["action"] == "adopt"
    assert resolved["plan"]["toolkit_packages"] == ["cuda-toolkit-13-0"]
    assert resolved["toolkit_missing"] is True
    assert resolved["plan"]["repo"]["wanted"] is True


def test_installed_toolkit_is_adopted(collections_path, tmp_path):
    nvcc = tmp_path / "cuda-13.0" / "bin" / "nvcc"
    nvcc.parent.mkdir(parents=True)
    nvcc.write_text("")
    resolved = plan(
        collections_path, tmp_path, "Ubuntu 24.04", "x86_64", load_probe(), nvidia_cuda_toolkit_version="13.0", nvidia_cuda_home=str(tmp_path / "cuda")
    )
    assert resolved["toolkit_missing"] is False


@pytest.mark.parametrize(
    "role_vars, action, min_version, min_from",
    [
        ({}, "adopt", "", "none"),
        ({"nvidia_driver_min_version": "570.86"}, "adopt", "570.86", "nvidia_driver_min_version"),
        ({"nvidia_driver_min_version": "580.159.04"}, "adopt", "580.159.04", "nvidia_driver_min_version"),
        ({"nvidia_driver_min_version": "590"}, "too_old", "590", "nvidia_driver_min_version"),
        ({"nvidia_driver_min_version": "590", "nvidia_driver_replace": True}, "install", "590", "nvidia_driver_min_version"),
        ({"nvidia_driver_replace": True}, "install", "", "none"),
        # The planner's minimum beats the variable, in both directions.
        ({"kunpeng_vllm_plan": {"driver_min": "600.10"}}, "too_old", "600.10", "kunpeng_vllm_plan.driver_min"),
        ({"kunpeng_vllm_plan": {"driver_min": "575"}, "nvidia_driver_min_version": "590"}, "adopt", "575", "kunpeng_vllm_plan.driver_min"),
        ({"kunpeng_vllm_plan": {"driver_min": None}, "nvidia_driver_min_version": "590"}, "too_old", "590", "nvidia_driver_min_version"),
    ],
)
def test_working_h200_driver_is_adopted_unless_too_old_or_replaced(collections_path, tmp_path, role_vars, action, min_version, min_from):
    resolved = plan(collections_path, tmp_path, "Ubuntu 24.04", "x86_64", load_probe(), **role_vars)
    assert resolved["plan"]["action"] == action
    assert resolved["plan"]["found_version"] == "580.159.04"
    assert resolved["plan"]["found_kernel_module"] == "open"
    assert resolved["plan"]["min_version"] == min_version
    assert resolved["plan"]["min_version_from"] == min_from


def test_gpu_without_driver_is_installed(collections_path, tmp_path):
    resolved = plan(collections_path, tmp_path, "Ubuntu 24.04", "aarch64")
    assert resolved["plan"]["action"] == "install"
    assert resolved["plan"]["working"] is False
    assert resolved["plan"]["pci_count"] == 1


@pytest.mark.parametrize(
    "name, arch, version",
    [
        ("NVIDIA-Linux-aarch64-580.159.04.run", "aarch64", "580.159.04"),
        ("NVIDIA-Linux-x86_64-580.82.07.run", "x86_64", "580.82.07"),
        ("driver.run", "", ""),
    ],
)
def test_runfile_name_is_parsed(collections_path, tmp_path, name, arch, version):
    resolved = plan(collections_path, tmp_path, "openEuler 24.03", "aarch64", nvidia_runfile_src="https://artifacts.example/nvidia/" + name)
    runfile = resolved["plan"]["runfile"]
    assert (runfile["name"], runfile["arch"], runfile["version"]) == (name, arch, version)
    assert runfile["expected_arch"] == "aarch64"
    assert runfile["remote"] is True


# --- The whole role, in check mode, must stop before any change -----------


@pytest.fixture()
def probe_without_driver(tmp_path):
    """Probe options: the H200's PCI bus, no nvidia-smi, no loaded module."""
    (tmp_path / "bin").mkdir()
    (tmp_path / "proc").mkdir()
    return {"tool_path": [str(tmp_path / "bin")], "tool_path_only": True, "procfs_root": str(tmp_path / "proc"), "sysfs_root": os.path.join(H200, "sysfs")}


def apply(collections_path, tmp_path, platform, arch, probe_options, **role_vars):
    facts = facts_for(platform, arch, {})
    del facts["kunpeng_accelerators"]  # the role probes for itself
    extra = {
        "facts": facts,
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
    proc, output = apply(collections_path, tmp_path, "openEuler 24.03", "aarch64", probe_without_driver, nvidia_runfile_src=src, nvidia_runfile_sha256=digest)
    assert_stopped_in_preflight(proc, output, "is for x86_64 but this host is aarch64: use NVIDIA-Linux-aarch64-<version>.run")


def test_runfile_with_a_wrong_checksum_fails_before_any_change(collections_path, tmp_path, probe_without_driver):
    src, digest = runfile(tmp_path, "NVIDIA-Linux-aarch64-580.159.04.run")
    wrong = hashlib.sha256(b"something else").hexdigest()
    proc, output = apply(collections_path, tmp_path, "openEuler 22.03", "aarch64", probe_without_driver, nvidia_runfile_src=src, nvidia_runfile_sha256=wrong)
    assert_stopped_in_preflight(proc, output, f"sha256 mismatch for {src}: expected {wrong}, the file on the controller has {digest}")


def test_runfile_without_a_checksum_fails_before_any_change(collections_path, tmp_path, probe_without_driver):
    src, dummy = runfile(tmp_path, "NVIDIA-Linux-x86_64-580.159.04.run")
    proc, output = apply(collections_path, tmp_path, "Ubuntu 24.04", "x86_64", probe_without_driver, nvidia_driver_source="runfile", nvidia_runfile_src=src)
    assert_stopped_in_preflight(proc, output, "nvidia_runfile_sha256 must be the 64-hex-digit SHA-256")


def test_distro_source_on_openeuler_fails_before_any_change(collections_path, tmp_path, probe_without_driver):
    proc, output = apply(collections_path, tmp_path, "openEuler 24.03", "x86_64", probe_without_driver, nvidia_driver_source="distro")
    assert_stopped_in_preflight(proc, output, "nvidia_driver_source 'distro' is not available on openEuler 24.03")


def test_no_gpu_and_no_driver_fails_before_any_change(collections_path, tmp_path, probe_without_driver):
    options = dict(probe_without_driver, sysfs_root=str(tmp_path / "empty-sys"))
    proc, output = apply(collections_path, tmp_path, "Ubuntu 24.04", "x86_64", options)
    assert_stopped_in_preflight(proc, output, "No NVIDIA GPU on the PCI bus")


@pytest.fixture()
def h200_doubles(tmp_path):
    """Probe options replaying the real H200 capture through a test-double nvidia-smi."""
    bindir, procdir = tmp_path / "bin", tmp_path / "proc"
    (procdir / "driver" / "nvidia").mkdir(parents=True)
    bindir.mkdir()
    with open(os.path.join(H200, "proc-driver-nvidia-version"), encoding="utf-8") as handle:
        (procdir / "driver" / "nvidia" / "version").write_text(handle.read())
    double = bindir / "nvidia-smi"
    double.write_text(
        "#!/bin/sh\n# Test double: replays the real H200 capture.\n"
        'case "$1" in\n'
        f"  --query-gpu=*) cat {H200}/query-gpu.csv ;;\n"
        f"  -q) cat {H200}/nvidia-smi-q-x.xml ;;\n"
        "  *) exit 2 ;;\n"
        "esac\n"
    )
    double.chmod(0o755)
    return {"tool_path": [str(bindir)], "tool_path_only": True, "procfs_root": str(procdir), "sysfs_root": os.path.join(H200, "sysfs")}


def test_h200_capture_is_adopted_in_check_mode_changing_only_the_env_file(collections_path, tmp_path, h200_doubles):
    facts = copy.deepcopy(h200_doubles)
    proc, output = apply(collections_path, tmp_path, "Ubuntu 24.04", "x86_64", facts, nvidia_driver_min_version="570")
    assert proc.returncode == 0, output
    assert "adopted driver 580.159.04 (open kernel module), not installed from a package" in output, output
    assert "minimum 570 (nvidia_driver_min_version) met" in output, output
    changed = [line for line in output.splitlines() if line.startswith("changed:")]
    # The env file's directory and the env file itself, nothing else.
    assert len(changed) == 2, output
    assert re.search(r"localhost\s+: ok=\d+\s+changed=2\s+unreachable=0\s+failed=0", output), output
    assert not (tmp_path / "etc").exists()  # check mode wrote nothing


def _report_lines(log):
    """The lines of the role's 'Report the driver' message in a playbook log."""
    block = log.split("Report the driver", 1)[1].split("]\n}", 1)[0]
    return [line.strip().strip(",").strip('"') for line in block.splitlines() if line.strip().startswith('"') and '"msg"' not in line]


def test_replay_reports_what_the_real_h200_run_reported(collections_path, tmp_path, h200_doubles):
    """The adopt run on the real H200 (logs in fixtures/nvidia/h200/adopt) said
    the same as the replay of its capture says now; its third run changed
    nothing and the GPU's persistence/MIG/driver state was the same before and after."""
    with open(os.path.join(H200_REAL_RUN, "adopt-1-check-diff.log"), encoding="utf-8") as handle:
        real = _report_lines(handle.read())
    assert real and real[0].startswith("adopted driver 580.159.04")
    proc, output = apply(collections_path, tmp_path, "Ubuntu 24.04", "x86_64", copy.deepcopy(h200_doubles))
    assert proc.returncode == 0, output
    replayed = _report_lines(output)
    # The driver and GPU lines come from the hardware; the service and
    # env-file lines depend on where the run happens.

    def host_independent(lines):
        return [line for line in lines if line.startswith("adopted driver") or "GPU(s)" in line]

    assert host_independent(real) == host_independent(replayed)
    with open(os.path.join(H200_REAL_RUN, "adopt-3-again.log"), encoding="utf-8") as handle:
        assert re.search(r"localhost\s+: ok=\d+\s+changed=0\s+unreachable=0\s+failed=0", handle.read())
    with open(os.path.join(H200_REAL_RUN, "gpu-state-before.csv"), encoding="utf-8") as before, \
            open(os.path.join(H200_REAL_RUN, "gpu-state-after.csv"), encoding="utf-8") as after:
        assert before.read() == after.read()
