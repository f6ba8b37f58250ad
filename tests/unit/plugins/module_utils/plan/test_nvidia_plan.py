"""The NVIDIA driver decision as plain functions: package names per branch, runfile names, minimum, action."""

import pytest

from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import nvidia_plan


# NVIDIA Driver Installation Guide: "Kernel Modules" (package per kernel
# module flavour), "Recent Updates" / "Ubuntu 590 and later packages" (no
# branch suffix from 590, cuda-drivers-<branch> removed) and "Version
# locking" (nvidia-driver-pinning-<branch> holds a branch).  Ubuntu's own
# archive keeps the branch in its names.
@pytest.mark.parametrize(
    "distribution, source, branch, module, pinning, driver, fabricmanager",
    [
        ("Ubuntu", "cuda_repo", "570", "open", [], ["nvidia-open-570"], ["nvidia-fabricmanager-570"]),
        ("Ubuntu", "cuda_repo", "575", "proprietary", [], ["cuda-drivers-575"], ["nvidia-fabricmanager-575"]),
        ("Ubuntu", "cuda_repo", "580", "open", [], ["nvidia-open-580"], ["nvidia-fabricmanager-580"]),
        ("Ubuntu", "cuda_repo", "580", "proprietary", [], ["cuda-drivers-580"], ["nvidia-fabricmanager-580"]),
        ("Ubuntu", "cuda_repo", "590", "open", ["nvidia-driver-pinning-590"], ["nvidia-open"], ["nvidia-fabricmanager"]),
        ("Ubuntu", "cuda_repo", "590", "proprietary", ["nvidia-driver-pinning-590"], ["cuda-drivers"], ["nvidia-fabricmanager"]),
        ("Ubuntu", "cuda_repo", "595", "open", ["nvidia-driver-pinning-595"], ["nvidia-open"], ["nvidia-fabricmanager"]),
        ("Ubuntu", "cuda_repo", "610", "proprietary", ["nvidia-driver-pinning-610"], ["cuda-drivers"], ["nvidia-fabricmanager"]),
        ("Debian", "cuda_repo", "580", "open", [], ["nvidia-open-580"], ["nvidia-fabricmanager-580"]),
        ("Debian", "cuda_repo", "580", "proprietary", [], ["cuda-drivers-580"], ["nvidia-fabricmanager-580"]),
        ("Debian", "cuda_repo", "590", "open", ["nvidia-driver-pinning-590"], ["nvidia-open"], ["nvidia-fabricmanager"]),
        ("Debian", "cuda_repo", "590", "proprietary", ["nvidia-driver-pinning-590"], ["cuda-drivers"], ["nvidia-fabricmanager"]),
        ("Ubuntu", "distro", "570", "open", [], ["nvidia-driver-570-server-open"], ["nvidia-fabricmanager-570"]),
        ("Ubuntu", "distro", "580", "proprietary", [], ["nvidia-driver-580-server"], ["nvidia-fabricmanager-580"]),
        ("Ubuntu", "distro", "590", "open", [], ["nvidia-driver-590-server-open"], ["nvidia-fabricmanager-590"]),
        ("openEuler", "cuda_repo", "580", "open", [], ["@nvidia-driver:580-open"], ["nvidia-fabric-manager"]),
        ("openEuler", "cuda_repo", "590", "proprietary", [], ["@nvidia-driver:590-dkms"], ["nvidia-fabric-manager"]),
        ("openEuler", "runfile", "590", "open", [], [], []),
        ("Ubuntu", "runfile", "580", "open", [], [], []),
        ("Debian", "distro", "580", "open", [], [], []),  # no such source on Debian: preflight refuses it
        ("openEuler", "distro", "580", "open", [], [], []),
    ],
)
def test_package_names_follow_the_branch(distribution, source, branch, module, pinning, driver, fabricmanager):
    assert nvidia_plan.packages(distribution, source, branch, module) == {
        "pinning": pinning, "driver": driver, "fabricmanager": fabricmanager}


@pytest.mark.parametrize("branch, unsuffixed", [("535", False), ("580", False), ("585", False), ("590", True), ("595", True), ("1000", True)])
def test_branch_590_is_where_the_suffix_goes(branch, unsuffixed):
    assert nvidia_plan.unsuffixed(branch) is unsuffixed


@pytest.mark.parametrize(
    "src, arch, name, file_arch, version, remote",
    [
        ("https://artifacts.example/nvidia/NVIDIA-Linux-aarch64-580.159.04.run", "aarch64", "NVIDIA-Linux-aarch64-580.159.04.run",
         "aarch64", "580.159.04", True),
        ("/srv/NVIDIA-Linux-x86_64-580.82.07.run", "aarch64", "NVIDIA-Linux-x86_64-580.82.07.run", "x86_64", "580.82.07", False),
        ("https://a.example/NVIDIA-Linux-x86_64-590.48.01.run?token=x#frag", "x86_64", "NVIDIA-Linux-x86_64-590.48.01.run",
         "x86_64", "590.48.01", True),
        ("ftp://a.example/driver.run", "x86_64", "driver.run", "", "", True),
        ("", "x86_64", "", "", "", False),
    ],
)
def test_runfile_name_is_parsed(src, arch, name, file_arch, version, remote):
    assert nvidia_plan.runfile(src, arch) == {"name": name, "arch": file_arch, "version": version,
                                              "expected_arch": arch, "remote": remote}


@pytest.mark.parametrize(
    "vllm_plan, variable, expected",
    [
        ({}, "", ("", "none")),
        (None, "570.86", ("570.86", "nvidia_driver_min_version")),
        ({"requirements": {"nvidia_driver_min": "580"}}, "", ("580", "kunpeng_vllm_plan.requirements.nvidia_driver_min")),
        # The planner's minimum beats the variable, in both directions.
        ({"requirements": {"nvidia_driver_min": "580"}}, "590", ("580", "kunpeng_vllm_plan.requirements.nvidia_driver_min")),
        ({"requirements": {"nvidia_driver_min": "525.60.13"}}, "570", ("525.60.13", "kunpeng_vllm_plan.requirements.nvidia_driver_min")),
        # CPU and Ascend plans carry no driver minimum.
        ({"requirements": {"python": ">=3.11"}}, "590", ("590", "nvidia_driver_min_version")),
        # The key the planner never set: not read.
        ({"driver_min": "600"}, "", ("", "none")),
    ],
)
def test_minimum_comes_from_the_planner_first(vllm_plan, variable, expected):
    assert nvidia_plan.minimum(vllm_plan, variable) == expected


@pytest.mark.parametrize(
    "found, minimum, meets",
    [
        ("580.159.04", "", True),
        ("580.159.04", "580", True),
        ("580.159.04", "580.159.04", True),
        ("580.159.04", "580.159.4", True),
        ("580.82.07", "580.159.04", False),
        ("575.57.08", "580", False),
        ("590.48.01", "580.159.04", True),
        (None, "580", False),
        ("", "", True),
    ],
)
def test_version_compare_uses_the_vendor_comparator(found, minimum, meets):
    assert nvidia_plan.meets(found, minimum) is meets


@pytest.mark.parametrize(
    "working, meets_min, replace, action",
    [
        (True, True, False, "adopt"),
        (True, False, False, "too_old"),
        (True, True, True, "install"),
        (True, False, True, "install"),
        (False, True, False, "install"),
        (False, False, False, "install"),
    ],
)
def test_action(working, meets_min, replace, action):
    assert nvidia_plan.action(working, meets_min, replace) == action


@pytest.mark.parametrize(
    "action, live, install_changed, rebooted, pending",
    [
        ("adopt", True, False, False, False),
        ("install", False, True, False, True),   # installed, nvidia_reboot false
        ("install", True, True, False, True),    # packages changed under a loaded driver
        ("install", True, True, True, False),    # rebooted into it
        ("install", False, False, False, True),  # installed by an earlier run, still not loaded
        ("install", True, False, False, False),  # nothing changed and the driver runs
    ],
)
def test_reboot_pending(action, live, install_changed, rebooted, pending):
    assert nvidia_plan.reboot_pending({"action": action}, live, install_changed, rebooted) is pending


def _plan(action, source, working=False, pinning=(), toolkit=(), remote=False):
    return {"action": action, "source": source, "working": working, "pinning_packages": list(pinning),
            "toolkit_packages": list(toolkit), "runfile": {"remote": remote}}


_STEPS = ["install_packages", "install_runfile", "pinning", "look_for_runfile_driver", "checksum_runfile",
          "toolkit_missing", "repository", "manage_services", "note_no_systemd", "persistenced_unit"]


@pytest.mark.parametrize(
    "plan, params, on",
    [
        # An adopted driver: nothing runs, services left as found.
        (_plan("adopt", "cuda_repo", working=True), {"service_mgr": "systemd"}, []),
        (_plan("too_old", "cuda_repo", working=True), {"service_mgr": "systemd"}, []),
        # Packages from NVIDIA's repository, branch 590 held by its pinning package.
        (_plan("install", "cuda_repo", pinning=["nvidia-driver-pinning-590"]), {"service_mgr": "systemd"},
         ["install_packages", "pinning", "repository", "manage_services"]),
        # Replacing a working driver: look for a runfile install under it first.
        (_plan("install", "distro", working=True), {"service_mgr": "systemd"},
         ["install_packages", "look_for_runfile_driver", "manage_services"]),
        # A container (no systemd): the services are noted, not managed.
        (_plan("install", "distro"), {"service_mgr": "process_api"}, ["install_packages", "note_no_systemd"]),
        # A runfile on the controller is checksummed there; its persistence daemon gets a unit.
        (_plan("install", "runfile"), {"service_mgr": "systemd"},
         ["install_runfile", "checksum_runfile", "manage_services", "persistenced_unit"]),
        (_plan("install", "runfile", remote=True), {"service_mgr": "systemd", "persistenced": False},
         ["install_runfile", "manage_services"]),
        (_plan("install", "runfile"), {"service_mgr": "sysvinit"}, ["install_runfile", "checksum_runfile", "note_no_systemd"]),
        # A toolkit that is not there yet needs the repository even on an adopted driver.
        (_plan("adopt", "runfile", working=True, toolkit=["cuda-toolkit-13-0"]), {"service_mgr": "systemd"},
         ["toolkit_missing", "repository"]),
        (_plan("adopt", "runfile", working=True, toolkit=["cuda-toolkit-13-0"]), {"service_mgr": "systemd", "toolkit_found": True}, []),
    ],
)
def test_steps(plan, params, on):
    steps = nvidia_plan.steps(plan, params)
    assert sorted(steps) == sorted(_STEPS)
    assert sorted(k for k, v in steps.items() if v) == sorted(on)
    assert all(isinstance(v, bool) for v in steps.values())


@pytest.mark.parametrize("distribution, pkg_mgr, driver", [
    # The role passes its vars file's package manager: a distribution unknown here gets the repository's names.
    ("Linaro", "apt", ["nvidia-open-580"]),
    ("AnolisOS", "dnf", ["@nvidia-driver:580-open"]),
    ("Linaro", None, []),
    # Without it, the known distributions.
    ("Debian", None, ["nvidia-open-580"]),
    ("openEuler", None, ["@nvidia-driver:580-open"]),
    ("openEuler", "dnf", ["@nvidia-driver:580-open"]),
])
def test_cuda_repository_names_follow_the_package_manager(distribution, pkg_mgr, driver):
    assert nvidia_plan.packages(distribution, "cuda_repo", "580", "open", pkg_mgr)["driver"] == driver
