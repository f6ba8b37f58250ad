"""nvidia_plan as the nvidia role runs it: probes from the real accelerator_facts, plans from the real vllm_plan.

Every probe here is accelerator_facts run on a committed capture (the H200
and HGX H100 hosts); every plan is vllm_plan run on the H200 capture.  The
platform data (sources, default source) is read from the role's vars files.
"""

import os
import re
import shutil

import fakes
import pytest
import role_vars
from conftest import FIXTURES, ROOT
from module_runner import run_main

from ansible_collections.kunpeng.vllm.plugins.module_utils import fact_contract
from ansible_collections.kunpeng.vllm.plugins.module_utils.backends import registry as backends
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import nvidia_plan as nvidia_decisions
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.service import service_spec
from ansible_collections.kunpeng.vllm.plugins.modules import nvidia_plan, vllm_plan

H200 = os.path.join(FIXTURES, "nvidia", "h200")
H100 = os.path.join(FIXTURES, "nvidia", "hgx-h100")
H200_REAL_RUN = os.path.join(ROOT, "tests", "unit", "fixtures", "nvidia", "h200", "adopt")
MIRROR = "https://mirror.example/cuda/repos"
VARS = os.path.join(ROOT, "roles", "nvidia", "vars")
PLATFORMS = {
    # distribution: (distribution_version, repo distro, repo key)
    "Ubuntu": ("24.04", "ubuntu2404", "3bf863cc.pub"),
    "Debian": ("12.11", "debian12", "3bf863cc.pub"),
    "openEuler": ("24.03", "rhel9", "D42D0685.pub"),
}


OS_FAMILY = {"Ubuntu": "Debian", "Debian": "Debian", "openEuler": "RedHat"}


def role_vars_for(distribution):
    """The nvidia role's platform data, layered as _common's set_vars loads it."""
    version = PLATFORMS[distribution][0]
    return role_vars.platform_vars("nvidia", {"os_family": OS_FAMILY[distribution], "distribution": distribution,
                                              "distribution_version": version,
                                              "distribution_major_version": version.split(".")[0]})


def probe_h200(tmp_path):
    """accelerator_facts on the real H200 capture (driver 580.159.04, open, 1 GPU)."""
    result, _warnings = fakes.run_module(fakes.nvidia_host(str(tmp_path / "h200"), H200))
    return fakes.facts_of(result)


def probe_h200_with_driver(tmp_path, version):
    """The H200 capture answering with an older driver (only the version strings are rewritten)."""
    case = tmp_path / "h200-old"
    shutil.copytree(H200, str(case))
    for name in ("query-gpu.csv", "nvidia-smi-q-x.xml", "proc-driver-nvidia-version"):
        path = case / name
        path.write_text(path.read_text().replace("580.159.04", version))
    result, _warnings = fakes.run_module(fakes.nvidia_host(str(tmp_path / "run-old"), str(case)))
    return fakes.facts_of(result)


def probe_h100_without_driver(tmp_path):
    """accelerator_facts on the HGX H100's PCI bus with no nvidia-smi (8 GPUs, 4 NVSwitches)."""
    args = fakes.host_args(str(tmp_path / "h100"), os.path.join(H100, "sysfs"), H100, "x86_64")
    result, _warnings = fakes.run_module(args)
    return fakes.facts_of(result)


def real_plan(accelerators, **extra):
    """vllm_plan's result on a probe (the newest CUDA row: CUDA 13.0, driver minimum 580)."""
    failed, result = run_main(vllm_plan.main, dict({"accelerators": accelerators, "python_version": "3.12"}, **extra))
    assert not failed, result.get("msg")
    return result["ansible_facts"]["kunpeng_vllm_plan"]


def args_for(accelerators, distribution="Ubuntu", architecture="x86_64", **extra):
    version, distro, key = PLATFORMS[distribution]
    data = role_vars_for(distribution)
    args = {
        "accelerators": accelerators,
        "distribution": distribution,
        "distribution_version": version,
        "architecture": architecture,
        "sources": data["__nvidia_sources"],
        "default_source": data["__nvidia_default_source"],
        "branch": "580",
        "repo_base_url": MIRROR,
        "repo_distro": distro,
        "repo_key": key,
    }
    args.update(extra)
    return args


def decide(args):
    failed, result = run_main(nvidia_plan.main, args)
    assert not failed, result.get("msg")
    assert result["changed"] is False
    return result["plan"]


# --- Defect: the planner's driver minimum was read from a key it never sets ---


def test_planner_minimum_makes_an_older_working_driver_too_old(tmp_path):
    plan = real_plan(probe_h200(tmp_path))
    assert plan["requirements"]["nvidia_driver_min"] == "580"
    assert "driver_min" not in plan  # the key the role used to read
    decision = decide(args_for(probe_h200_with_driver(tmp_path, "575.57.08"), vllm_plan=plan))
    assert decision["working"] is True and decision["found_version"] == "575.57.08"
    assert decision["action"] == "too_old"
    assert (decision["min_version"], decision["min_version_from"]) == ("580", "kunpeng_vllm_plan.requirements.nvidia_driver_min")
    assert decision["refusals"] == [
        "The running NVIDIA driver 575.57.08 is older than the minimum 580 (from kunpeng_vllm_plan.requirements.nvidia_driver_min). "
        "Nothing was changed. Fix: upgrade the driver yourself, or set nvidia_driver_replace: true to install branch 580 "
        "(open kernel modules) from cuda_repo (a new driver needs a reboot: nvidia_reboot: true, or reboot yourself)."]


def test_real_h200_meets_the_planner_minimum_and_is_adopted(tmp_path):
    probe = probe_h200(tmp_path)
    decision = decide(args_for(probe, vllm_plan=real_plan(probe), min_version="590"))
    assert decision["action"] == "adopt" and decision["refusals"] == []
    assert decision["found_version"] == "580.159.04" and decision["found_kernel_module"] == "open"


@pytest.mark.parametrize(
    "extra, action, min_version, min_from",
    [
        ({}, "adopt", "", "none"),
        ({"min_version": "570.86"}, "adopt", "570.86", "nvidia_driver_min_version"),
        ({"min_version": "580.159.04"}, "adopt", "580.159.04", "nvidia_driver_min_version"),
        ({"min_version": "590"}, "too_old", "590", "nvidia_driver_min_version"),
        ({"min_version": "590", "replace": True}, "install", "590", "nvidia_driver_min_version"),
        ({"replace": True}, "install", "", "none"),
    ],
)
def test_working_h200_driver_is_adopted_unless_too_old_or_replaced(tmp_path, extra, action, min_version, min_from):
    decision = decide(args_for(probe_h200(tmp_path), **extra))
    assert (decision["action"], decision["min_version"], decision["min_version_from"]) == (action, min_version, min_from)


def test_too_old_below_the_branch_says_to_raise_the_branch(tmp_path):
    decision = decide(args_for(probe_h200(tmp_path), min_version="590"))
    assert decision["refusals"][0].endswith("from cuda_repo - set nvidia_driver_branch to a branch of at least 590 first "
                                            "(a new driver needs a reboot: nvidia_reboot: true, or reboot yourself).")


# --- Repository and packages on real probes ------------------------------------


@pytest.mark.parametrize("architecture, repo_arch", [("aarch64", "sbsa"), ("x86_64", "x86_64")])
@pytest.mark.parametrize("distribution", sorted(PLATFORMS))
def test_cuda_repository_url_and_key(tmp_path, distribution, architecture, repo_arch):
    decision = decide(args_for(probe_h100_without_driver(tmp_path), distribution, architecture, source="cuda_repo"))
    url = f"{MIRROR}/{PLATFORMS[distribution][1]}/{repo_arch}/"
    assert decision["repo"] == {"distro": PLATFORMS[distribution][1], "arch": repo_arch, "url": url,
                                "key_url": url + PLATFORMS[distribution][2], "wanted": True}
    assert decision["action"] == "install" and decision["refusals"] == []


def test_trailing_slashes_of_the_mirror_url_are_ignored(tmp_path):
    decision = decide(args_for(probe_h100_without_driver(tmp_path), architecture="aarch64", repo_base_url=MIRROR + "//"))
    assert decision["repo"]["url"] == MIRROR + "/ubuntu2404/sbsa/"


def test_trusted_test_repository_has_no_key(tmp_path):
    decision = decide(args_for(probe_h100_without_driver(tmp_path), repo_base_url="file:///srv/repo", repo_trusted=True))
    assert decision["repo"]["url"] == "file:///srv/repo/ubuntu2404/x86_64/"
    assert decision["repo"]["key_url"] == ""


@pytest.mark.parametrize(
    "distribution, branch, pinning, driver, fabricmanager, state",
    [
        ("Ubuntu", "580", [], ["nvidia-open-580"], ["nvidia-fabricmanager-580"], "present"),
        ("Ubuntu", "590", ["nvidia-driver-pinning-590"], ["nvidia-open"], ["nvidia-fabricmanager"], "latest"),
        ("Debian", "590", ["nvidia-driver-pinning-590"], ["nvidia-open"], ["nvidia-fabricmanager"], "latest"),
        ("openEuler", "580", [], ["@nvidia-driver:580-open"], ["nvidia-fabric-manager"], "present"),
    ],
)
def test_nvswitch_host_without_driver_gets_driver_and_fabric_manager(tmp_path, distribution, branch, pinning, driver, fabricmanager, state):
    decision = decide(args_for(probe_h100_without_driver(tmp_path), distribution, source="cuda_repo", branch=branch))
    assert decision["action"] == "install" and decision["fabric_manager"] is True and decision["pci_count"] == 8
    assert (decision["pinning_packages"], decision["driver_packages"], decision["fabricmanager_packages"]) == (pinning, driver, fabricmanager)
    assert decision["package_state"] == state


def test_single_gpu_host_gets_no_fabric_manager(tmp_path):
    decision = decide(args_for(probe_h200(tmp_path), replace=True))
    assert decision["fabric_manager"] is False and decision["fabricmanager_packages"] == []


def test_toolkit_needs_the_repository_even_for_an_adopted_driver(tmp_path):
    decision = decide(args_for(probe_h200(tmp_path), source="distro", toolkit_version="13.0"))
    assert decision["action"] == "adopt"
    assert decision["toolkit_packages"] == ["cuda-toolkit-13-0"] and decision["repo"]["wanted"] is True
    assert decision["steps"]["toolkit_missing"] is True and decision["steps"]["repository"] is True
    assert decision["steps"]["install_packages"] is False
    found = decide(args_for(probe_h200(tmp_path), source="distro", toolkit_version="13.0", toolkit_found=True))
    assert found["steps"]["toolkit_missing"] is False and found["steps"]["repository"] is False


def test_hgx_without_driver_installs_and_manages_services_under_systemd_only(tmp_path):
    probe = probe_h100_without_driver(tmp_path)
    decision = decide(args_for(probe, service_mgr="systemd"))
    assert decision["action"] == "install"
    assert {k for k, v in decision["steps"].items() if v} == {"install_packages", "repository", "manage_services"}
    decision = decide(args_for(probe, service_mgr="process_api"))
    assert decision["steps"]["manage_services"] is False and decision["steps"]["note_no_systemd"] is True


@pytest.mark.parametrize(
    "distribution, default_source",
    [("Ubuntu", "cuda_repo"), ("Debian", "cuda_repo"), ("openEuler", "runfile")],
)
def test_platform_default_source(tmp_path, distribution, default_source):
    decision = decide(args_for(probe_h200(tmp_path), distribution))
    assert decision["source"] == default_source


# --- Refusals, before any change ------------------------------------------------


@pytest.mark.parametrize(
    "distribution, architecture, extra, message",
    [
        ("openEuler", "x86_64", {"source": "distro"},
         "nvidia_driver_source 'distro' is not available on openEuler 24.03 (available: cuda_repo, runfile;"),
        ("Debian", "x86_64", {"source": "distro"}, "nvidia_driver_source 'distro' is not available on Debian 12.11"),
        ("openEuler", "aarch64", {"runfile_src": "/srv/NVIDIA-Linux-x86_64-580.159.04.run", "runfile_sha256": "0" * 64},
         "nvidia_runfile_src NVIDIA-Linux-x86_64-580.159.04.run is for x86_64 but this host is aarch64: "
         "use NVIDIA-Linux-aarch64-<version>.run. Nothing was changed."),
        ("openEuler", "aarch64", {}, "nvidia_driver_source is runfile but nvidia_runfile_src is empty."),
        ("openEuler", "aarch64", {"runfile_src": "https://a.example/driver.run"},
         "nvidia_runfile_src driver.run is not named NVIDIA-Linux-<arch>-<version>.run."),
        ("Ubuntu", "x86_64", {"source": "runfile", "runfile_src": "/srv/NVIDIA-Linux-x86_64-580.159.04.run"},
         "nvidia_runfile_sha256 must be the 64-hex-digit SHA-256 of NVIDIA-Linux-x86_64-580.159.04.run"),
    ],
)
def test_bad_requests_are_refused(tmp_path, distribution, architecture, extra, message):
    decision = decide(args_for(probe_h100_without_driver(tmp_path), distribution, architecture, **extra))
    assert len(decision["refusals"]) == 1 and decision["refusals"][0].startswith(message), decision["refusals"]


def test_right_runfile_is_accepted(tmp_path):
    decision = decide(args_for(probe_h100_without_driver(tmp_path), "openEuler", "aarch64",
                               runfile_src="https://a.example/NVIDIA-Linux-aarch64-580.159.04.run", runfile_sha256="a" * 64))
    assert decision["refusals"] == []
    assert decision["runfile"]["version"] == "580.159.04" and decision["runfile"]["remote"] is True


def test_no_gpu_and_no_driver_is_refused(tmp_path):
    args = fakes.host_args(str(tmp_path / "plain"), None, "x86-avx2", "x86_64")
    result, _warnings = fakes.run_module(args)
    decision = decide(args_for(fakes.facts_of(result)))
    assert decision["action"] == "install"
    assert decision["refusals"][0].startswith("No NVIDIA GPU on the PCI bus (0 PCI functions read) and no working driver")


# --- The report and the kunpeng_nvidia fact -----------------------------------


def report(accelerators, plan, **outcome):
    base = {"service_mgr": "process_api", "kernel_module": "open", "manage_env_file": True,
            "env_file": "/etc/vllm/nvidia.env", "cuda_home": "/usr/local/cuda"}
    base.update(outcome)
    args = args_for(accelerators, report_for=plan, outcome=base)
    failed, result = run_main(nvidia_plan.main, args)
    assert not failed, result.get("msg")
    # Every report the module builds keeps to the declared fact contract.
    assert fact_contract.check("kunpeng_nvidia", result["ansible_facts"]["kunpeng_nvidia"]) == []
    return result["ansible_facts"]["kunpeng_nvidia"], result["report_lines"]


def test_the_vllm_service_loads_the_env_file_the_report_names(tmp_path):
    """The plan's service entry (plan/service.py) reads the kunpeng_nvidia fact this module reports."""
    probe = probe_h200(tmp_path)
    fact, _lines = report(probe, decide(args_for(probe)), owner_rc=1)
    entry = service_spec(backends.get("cuda"), probe, "0", None, {"kunpeng_nvidia": fact})
    assert entry["environment_files"] == ["/etc/vllm/nvidia.env"] and entry["supplementary_groups"] == []
    assert entry["environment"] == {"CUDA_VISIBLE_DEVICES": "0"}


def _logged_report_lines(log):
    """The lines of the role's 'Report the driver' message in a playbook log."""
    block = log.split("Report the driver", 1)[1].split("]\n}", 1)[0]
    return [line.strip().strip(",").strip('"') for line in block.splitlines() if line.strip().startswith('"') and '"msg"' not in line]


def test_report_says_what_the_real_h200_run_reported(tmp_path):
    """The adopt run on the real H200 (logs in fixtures/nvidia/h200/adopt) printed these lines."""
    with open(os.path.join(H200_REAL_RUN, "adopt-1-check-diff.log"), encoding="utf-8") as handle:
        real = _logged_report_lines(handle.read())
    probe = probe_h200(tmp_path)
    fact, lines = report(probe, decide(args_for(probe)), owner_rc=1)
    assert lines == real
    assert fact == {"driver_version": "580.159.04", "kernel_module": "open", "adopted": True, "env_file": "/etc/vllm/nvidia.env",
                    "cuda_home": "/usr/local/cuda", "action": "adopt", "source": "adopted", "gpu_count": 1,
                    "reboot_pending": False, "services_managed": False}


def test_fresh_install_without_reboot_leaves_a_reboot_pending(tmp_path):
    probe = probe_h100_without_driver(tmp_path)
    plan = decide(args_for(probe, source="cuda_repo", branch="590"))
    fact, lines = report(probe, plan, install_changed=True, service_mgr="systemd")
    assert fact["reboot_pending"] is True and fact["action"] == "install" and fact["source"] == "cuda_repo"
    assert fact["services_managed"] is True and fact["adopted"] is False
    assert lines[0].startswith("driver from cuda_repo: installed, reboot pending")
    assert lines[1] == "nvidia-smi lists no GPU yet"
    assert "NVSwitch system: Fabric Manager required" in lines


def test_install_that_rebooted_and_runs_is_not_pending(tmp_path):
    plan = decide(args_for(probe_h100_without_driver(tmp_path), source="cuda_repo"))
    fact, lines = report(probe_h200(tmp_path), plan, install_changed=True, rebooted=True)
    assert fact["reboot_pending"] is False and fact["driver_version"] == "580.159.04"
    assert lines[0] == "driver from cuda_repo: 580.159.04 (open kernel module) running"


def test_adopted_driver_with_another_kernel_module_is_left_as_found(tmp_path):
    probe = probe_h200(tmp_path)
    fact, lines = report(probe, decide(args_for(probe)), kernel_module="proprietary",
                         owner_rc=0, owner_stdout="nvidia-utils-580: /usr/bin/nvidia-smi")
    assert lines[0] == "adopted driver 580.159.04 (open kernel module), installed from package nvidia-utils-580"
    assert any(re.match(r"kernel module is open, nvidia_kernel_module asks for proprietary: left as found", line) for line in lines)
    assert fact["adopted"] is True


def test_adopted_driver_needs_no_runfile_checksum(tmp_path):
    decision = decide(args_for(probe_h200(tmp_path), "openEuler", runfile_src="/srv/NVIDIA-Linux-x86_64-580.159.04.run"))
    assert decision["action"] == "adopt" and decision["refusals"] == []


# --- Defect: the open kernel module was planned for Volta and Pascal GPUs ---
# NVIDIA Driver Installation Guide, "Kernel Modules": the open GPU kernel modules are only for Turing and
# newer; Maxwell, Pascal and Volta need the proprietary flavour.  NVIDIA's "Unix Graphics Feature
# Deprecation Schedule": the 580 series is the last to support Maxwell, Pascal and Volta.  The PCI ids are
# those of NVIDIA/open-gpu-kernel-modules' "Compatible GPUs" table (Turing starts at 0x1E02) and of the
# Tesla V100 PCIe 32GB (0x1DB6) and Tesla P100 PCIe 16GB (0x15F8).


def probe_without_driver(tmp_path, device_id):
    """The HGX H100 capture's PCI bus with its 8 GPUs (0x2330) given another device id, no nvidia-smi."""
    case = tmp_path / f"bus-{device_id}"
    shutil.copytree(os.path.join(H100, "sysfs"), str(case / "sysfs"))
    for path in (case / "sysfs").rglob("device"):
        if path.is_file() and path.read_text().strip() == "0x2330":
            path.write_text(device_id + "\n")
    args = fakes.host_args(str(tmp_path / f"run-{device_id}"), str(case / "sysfs"), H100, "x86_64")
    result, _warnings = fakes.run_module(args)
    return fakes.facts_of(result)


@pytest.mark.parametrize(
    "device_id, distribution, source, branch, asked, module, driver, refused",
    [
        # Tesla V100: proprietary packages of branch 580, in each source's naming.
        ("0x1db6", "Ubuntu", "cuda_repo", "580", "auto", "proprietary", ["cuda-drivers-580"], None),
        ("0x1db6", "Debian", "cuda_repo", "580", "auto", "proprietary", ["cuda-drivers-580"], None),
        ("0x1db6", "Ubuntu", "distro", "580", "auto", "proprietary", ["nvidia-driver-580-server"], None),
        ("0x15f8", "Ubuntu", "cuda_repo", "580", "proprietary", "proprietary", ["cuda-drivers-580"], None),
        # Newer branches and the open flavour are refused with the fix named.
        ("0x1db6", "Ubuntu", "cuda_repo", "590", "auto", "proprietary", ["cuda-drivers"], r"nvidia_driver_branch: '580'"),
        ("0x1db6", "Ubuntu", "cuda_repo", "580", "open", "open", ["nvidia-open-580"], r"nvidia_kernel_module: proprietary"),
        # Turing (Tesla T4) and Hopper keep the open flavour and any branch.
        ("0x1eb8", "Ubuntu", "cuda_repo", "580", "auto", "open", ["nvidia-open-580"], None),
        ("0x2330", "Ubuntu", "cuda_repo", "590", "auto", "open", ["nvidia-open"], None),
    ],
)
def test_gpu_generation_picks_the_kernel_module(tmp_path, device_id, distribution, source, branch, asked, module, driver,
                                                refused):
    probe = probe_without_driver(tmp_path, device_id)
    plan = decide(args_for(probe, distribution, source=source, branch=branch, kernel_module=asked))
    assert plan["action"] == "install"
    assert plan["kernel_module"] == module
    assert plan["driver_packages"] == driver
    assert bool(plan["pre_turing_gpus"]) is (int(device_id, 16) < 0x1E00)
    if refused:
        assert any(re.search(refused, line) for line in plan["refusals"]), plan["refusals"]
    else:
        assert plan["refusals"] == []


# Issue 36 point 7: NVIDIA Driver Installation Guide, "Kernel Modules": "For cutting-edge platforms such as NVIDIA Grace
# Hopper or NVIDIA Blackwell, you must use the open-source GPU kernel modules. The proprietary drivers are unsupported
# on these platforms."
@pytest.mark.parametrize("device_id, architecture, asked, module, refused", [
    # Blackwell (B200 0x2901, RTX 5090 0x2b85): proprietary refused on any CPU; auto is open.
    ("0x2901", "x86_64", "proprietary", "proprietary", True),
    ("0x2901", "aarch64", "proprietary", "proprietary", True),
    ("0x2b85", "x86_64", "proprietary", "proprietary", True),
    ("0x2901", "x86_64", "auto", "open", False),
    # Grace Hopper: a Hopper GPU on the aarch64 Grace CPU.
    ("0x2330", "aarch64", "proprietary", "proprietary", True),
    ("0x2330", "aarch64", "auto", "open", False),
    # Hopper on x86_64 (HGX H100) and Ada (L40S 0x26b9) still take the proprietary flavour when asked.
    ("0x2330", "x86_64", "proprietary", "proprietary", False),
    ("0x26b9", "x86_64", "proprietary", "proprietary", False),
])
def test_proprietary_is_refused_on_open_only_platforms(tmp_path, device_id, architecture, asked, module, refused):
    probe = probe_without_driver(tmp_path, device_id)
    plan = decide(args_for(probe, "Ubuntu", architecture=architecture, kernel_module=asked))
    assert plan["action"] == "install" and plan["kernel_module"] == module
    # every auto row of the table is an open-only platform; the proprietary rows are one exactly when refused
    assert bool(plan["open_only_gpus"]) is (refused or asked == "auto")
    lines = [line for line in plan["refusals"] if "nvidia_kernel_module is proprietary" in line]
    assert bool(lines) is refused, plan["refusals"]
    if refused:
        assert "Nothing was changed" in lines[0] and "nvidia_kernel_module: auto" in lines[0]


@pytest.mark.parametrize("cap, architecture, refused", [
    ("10.0", "x86_64", True), ("12.0", "x86_64", True), ("9.0", "aarch64", True), ("9.0", "x86_64", False),
    ("8.9", "aarch64", False),
])
def test_open_only_gpus_by_compute_capability(cap, architecture, refused):
    probe = {"nvidia": {"gpus": [{"index": 0, "name": "GPU", "compute_cap": cap}]}}
    assert bool(nvidia_decisions.open_only_gpus(probe, architecture)) is refused


def test_working_volta_driver_is_judged_by_compute_capability(tmp_path):
    """With nvidia-smi answering, the compute capability decides (V100: 7.0), not the PCI id."""
    case = tmp_path / "v100"
    shutil.copytree(H200, str(case))
    csv = case / "query-gpu.csv"
    text = csv.read_text()
    assert ", 9.0," in text
    csv.write_text(text.replace(", 9.0,", ", 7.0,"))
    result, _warnings = fakes.run_module(fakes.nvidia_host(str(tmp_path / "run-v100"), str(case)))
    probe = fakes.facts_of(result)
    assert probe["nvidia"]["gpus"][0]["compute_cap"] == "7.0"
    plan = decide(args_for(probe, replace=True, branch="590"))
    assert plan["kernel_module"] == "proprietary"
    assert any("580 is the last branch" in line for line in plan["refusals"])
