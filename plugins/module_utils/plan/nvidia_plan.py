# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""The NVIDIA driver decision: adopt, too old or install, from where, which packages, and the report.

Everything the ``kunpeng.vllm.nvidia`` role decides is here, as plain
functions over the probe (``kunpeng_accelerators``), the plan
(``kunpeng_vllm_plan``) and the role's variables.  The role's task files only
call the ``kunpeng.vllm.nvidia_plan`` module and act on its result.

Package names per branch follow NVIDIA's Driver Installation Guide:

* "Kernel Modules", open and proprietary installation tables: ``nvidia-open``
  (open kernel modules) and ``cuda-drivers`` (proprietary) from the CUDA
  repository; up to branch 580 a branch is chosen with the suffixed names
  ``nvidia-open-<branch>`` / ``cuda-drivers-<branch>``; on rhel9 the branch is
  a dnf module stream ``nvidia-driver:<branch>-open`` / ``<branch>-dkms``.
* "Recent Updates", "Ubuntu 590 and later packages" and "Version locking
  packages for Ubuntu / Debian": from branch 590 the packages lose the branch
  suffix (``cuda-drivers-<branch>`` goes away, ``nvidia-dkms-<branch>-open``
  becomes ``nvidia-dkms-open``), and a branch is held with the pinning
  package ``nvidia-driver-pinning-<branch>``, installed before the driver.

Ubuntu's own archive (source ``distro``) keeps the branch in its names
(``nvidia-driver-<branch>-server[-open]``).
"""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

import re
from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.compat_matrix import version_cmp

ACTIONS = ("adopt", "too_old", "install")
SOURCES = ("cuda_repo", "distro", "runfile")
KERNEL_MODULES = ("auto", "open", "proprietary")
# First branch whose CUDA-repository apt packages carry no branch suffix.
UNSUFFIXED_BRANCH = "590"
# uname -m -> directory of NVIDIA's CUDA repository ("sbsa" for Arm64 servers,
# there is no "aarch64" tree) and -> architecture in a runfile name.
REPO_ARCH = {"aarch64": "sbsa", "x86_64": "x86_64"}
RUNFILE_ARCH = {"aarch64": "aarch64", "x86_64": "x86_64"}
APT_DISTRIBUTIONS = ("Ubuntu", "Debian")
DNF_DISTRIBUTIONS = ("openEuler",)

# NVIDIA Driver Installation Guide, "Kernel Modules": the open GPU kernel modules run on Turing and newer
# only; Maxwell, Pascal and Volta need the proprietary flavour.  Turing is compute capability 7.5.
OPEN_MODULES_MIN_COMPUTE_CAP = "7.5"
# PCI device ids, for a host without a working driver (no nvidia-smi, so no compute capability): the
# compatible-GPU table of NVIDIA/open-gpu-kernel-modules (README.md, "Compatible GPUs") starts at
# 0x1E02 (TITAN RTX, TU102); every Maxwell, Pascal and Volta id is lower (Tesla V100 0x1DB1-0x1DF6,
# Tesla P100 0x15F7-0x15F9, Tesla P40 0x1B38).
FIRST_TURING_DEVICE_ID = 0x1E00
# Open-only platforms (open_only_gpus): Blackwell from compute capability 10.0 (B200, GB200; GeForce RTX 50 is 12.0);
# its PCI ids start at 0x2900 (GB100) after Ada's 0x26xx-0x28xx; Hopper's ids are 0x23xx (H100 0x2330).
FIRST_BLACKWELL_COMPUTE_CAP = "10.0"
FIRST_BLACKWELL_DEVICE_ID = 0x2900
HOPPER_DEVICE_IDS = (0x2300, 0x2400)
# NVIDIA, "Unix Graphics Feature Deprecation Schedule" (forums.developer.nvidia.com, topic 60588): "The
# release 580 series will be the last to support GPUs based on the Maxwell, Pascal, and Volta architectures."
LAST_PRE_TURING_BRANCH = "580"

_RUNFILE_NAME = re.compile(r"^NVIDIA-Linux-([A-Za-z0-9_]+)-([0-9][0-9.]*)\.run$")
_REMOTE = re.compile(r"^(https?|ftp)://")
_SHA256 = re.compile(r"^[0-9a-fA-F]{64}$")


def unsuffixed(branch: str) -> bool:
    """True from branch 590 on, where NVIDIA's apt packages drop the branch from their names."""
    return version_cmp(branch, UNSUFFIXED_BRANCH) >= 0


def repo_manager(distribution: str, pkg_mgr: Optional[str] = None) -> str:
    """The package manager whose CUDA repository layout applies: the role's platform variable
    (``__nvidia_pkg_mgr``, from vars/<os_family>.yml), else the distributions known here."""
    if pkg_mgr:
        return pkg_mgr
    if distribution in APT_DISTRIBUTIONS:
        return "apt"
    return "dnf" if distribution in DNF_DISTRIBUTIONS else ""


def packages(distribution: str, source: str, branch: str, kernel_module: str,
             pkg_mgr: Optional[str] = None) -> Dict[str, List[str]]:
    """Package names for one driver branch: ``pinning`` (installed first), ``driver`` and ``fabricmanager``.

    Empty lists for the runfile and for a source the distribution does not
    have (preflight refuses those).  ``pkg_mgr`` (apt, dnf) picks the CUDA
    repository's names, so a new distribution needs only its vars file.
    """
    branch = str(branch)
    empty: Dict[str, List[str]] = {"pinning": [], "driver": [], "fabricmanager": []}
    manager = repo_manager(distribution, pkg_mgr)
    if source == "cuda_repo" and manager == "apt":
        if unsuffixed(branch):
            return {"pinning": [f"nvidia-driver-pinning-{branch}"],
                    "driver": ["nvidia-open" if kernel_module == "open" else "cuda-drivers"],
                    "fabricmanager": ["nvidia-fabricmanager"]}
        return {"pinning": [],
                "driver": [f"nvidia-open-{branch}" if kernel_module == "open" else f"cuda-drivers-{branch}"],
                "fabricmanager": [f"nvidia-fabricmanager-{branch}"]}
    if source == "cuda_repo" and manager == "dnf":
        stream = "open" if kernel_module == "open" else "dkms"
        return {"pinning": [], "driver": [f"@nvidia-driver:{branch}-{stream}"], "fabricmanager": ["nvidia-fabric-manager"]}
    if source == "distro" and distribution == "Ubuntu":
        suffix = "-server-open" if kernel_module == "open" else "-server"
        return {"pinning": [], "driver": [f"nvidia-driver-{branch}{suffix}"], "fabricmanager": [f"nvidia-fabricmanager-{branch}"]}
    return empty


def pre_turing_gpus(probe: Dict[str, Any]) -> List[str]:
    """The GPUs older than Turing, each as a short label; empty when every GPU is Turing or newer.

    A working driver's ``nvidia.gpus[].compute_cap`` decides; without one (the host the role installs
    a driver on) the PCI device ids of ``pci.nvidia`` do.
    """
    gpus = (probe.get("nvidia") or {}).get("gpus") or []
    if gpus and all(gpu.get("compute_cap") for gpu in gpus):
        return [f"{gpu.get('name') or 'GPU ' + str(gpu.get('index'))} (compute capability {gpu['compute_cap']})"
                for gpu in gpus if version_cmp(str(gpu["compute_cap"]), OPEN_MODULES_MIN_COMPUTE_CAP) < 0]
    out = []
    for function in (probe.get("pci") or {}).get("nvidia") or []:
        try:
            device = int(str(function.get("device_id") or ""), 16)
        except ValueError:
            continue
        if device < FIRST_TURING_DEVICE_ID:
            out.append(f"PCI {function.get('bus_id')} (device id {function.get('device_id')}, older than Turing)")
    return out


def open_only_gpus(probe: Dict[str, Any], architecture: str) -> List[str]:
    """The GPUs whose platform NVIDIA supports with the open kernel modules only (Grace Hopper, Blackwell), each as a
    short label; empty when none.

    NVIDIA Driver Installation Guide, "Kernel Modules": "For cutting-edge platforms such as NVIDIA Grace Hopper or
    NVIDIA Blackwell, you must use the open-source GPU kernel modules. The proprietary drivers are unsupported on
    these platforms."  Blackwell is compute capability 10.0 and newer (PCI device ids from 0x2900 on); Grace Hopper is
    a Hopper GPU (9.x, ids 0x23xx) on the aarch64 Grace CPU.  As in :func:`pre_turing_gpus`, a working driver's
    compute capability decides, else the PCI device id.
    """
    grace = architecture == "aarch64"
    gpus = (probe.get("nvidia") or {}).get("gpus") or []
    if gpus and all(gpu.get("compute_cap") for gpu in gpus):
        out = []
        for gpu in gpus:
            cap = str(gpu["compute_cap"])
            label = f"{gpu.get('name') or 'GPU ' + str(gpu.get('index'))} (compute capability {cap}"
            if version_cmp(cap, FIRST_BLACKWELL_COMPUTE_CAP) >= 0:
                out.append(label + ", Blackwell)")
            elif grace and cap.split(".", maxsplit=1)[0] == "9":
                out.append(label + ", Grace Hopper)")
        return out
    out = []
    for function in (probe.get("pci") or {}).get("nvidia") or []:
        try:
            device = int(str(function.get("device_id") or ""), 16)
        except ValueError:
            continue
        if device >= FIRST_BLACKWELL_DEVICE_ID:
            out.append(f"PCI {function.get('bus_id')} (device id {function.get('device_id')}, Blackwell)")
        elif grace and HOPPER_DEVICE_IDS[0] <= device < HOPPER_DEVICE_IDS[1]:
            out.append(f"PCI {function.get('bus_id')} (device id {function.get('device_id')}, Grace Hopper)")
    return out


def kernel_module(asked: str, pre_turing: List[str]) -> str:
    """The flavour to install: ``auto`` is open on Turing and newer, proprietary when any GPU is older."""
    if asked == "auto":
        return "proprietary" if pre_turing else "open"
    return asked


def toolkit_packages(toolkit_version: str) -> List[str]:
    """``cuda-toolkit-<major>-<minor>`` for a requested toolkit, else nothing."""
    return [f"cuda-toolkit-{toolkit_version.replace('.', '-')}"] if toolkit_version else []


def runfile(src: str, architecture: str) -> Dict[str, Any]:
    """What the runfile's name says: ``name``, ``arch``, ``version`` ('' when not NVIDIA-Linux-<arch>-<version>.run)."""
    name = re.sub(r"[?#].*$", "", src or "").rstrip("/").rsplit("/", 1)[-1]
    match = _RUNFILE_NAME.match(name)
    return {
        "name": name,
        "arch": match.group(1) if match else "",
        "version": match.group(2) if match else "",
        "expected_arch": RUNFILE_ARCH.get(architecture, architecture),
        "remote": bool(_REMOTE.match(src or "")),
    }


def minimum(vllm_plan: Optional[Dict[str, Any]], variable: str) -> Tuple[str, str]:
    """The driver minimum and where it came from.

    The planner's ``requirements.nvidia_driver_min`` (what the chosen CUDA row
    needs) beats ``nvidia_driver_min_version``; without either there is none.
    """
    planned = ((vllm_plan or {}).get("requirements") or {}).get("nvidia_driver_min")
    if planned:
        return str(planned), "kunpeng_vllm_plan.requirements.nvidia_driver_min"
    if variable:
        return str(variable), "nvidia_driver_min_version"
    return "", "none"


def working(probe_nvidia: Dict[str, Any]) -> bool:
    """A driver works when nvidia-smi answered and listed at least one GPU."""
    return bool(probe_nvidia.get("tool")) and bool(probe_nvidia.get("gpus"))


def meets(found: Optional[str], min_version: str) -> bool:
    if not min_version:
        return True
    return bool(found) and version_cmp(found, min_version) >= 0


def action(is_working: bool, meets_min: bool, replace: bool) -> str:
    """install (no working driver, or replacing asked for), adopt (meets the minimum) or too_old."""
    if not is_working or replace:
        return "install"
    return "adopt" if meets_min else "too_old"


def decide(params: Dict[str, Any]) -> Dict[str, Any]:
    """The whole plan (the role's ``__nvidia_plan``) from the module's parameters."""
    probe = params.get("accelerators") or {}
    nvidia = probe.get("nvidia") or {}
    pci = probe.get("pci") or {}
    architecture = params["architecture"]
    source = params.get("source") or params["default_source"]
    branch = str(params["branch"])
    is_working = working(nvidia)
    min_version, min_from = minimum(params.get("vllm_plan"), params.get("min_version") or "")
    meets_min = meets(nvidia.get("driver_version"), min_version)
    older = pre_turing_gpus(probe)
    module = kernel_module(params.get("kernel_module") or "auto", older)
    names = packages(params["distribution"], source, branch, module, params.get("pkg_mgr"))
    fabric_manager = bool(nvidia.get("fabric_manager_required"))
    base = re.sub(r"/+$", "", params["repo_base_url"])
    repo_arch = REPO_ARCH.get(architecture, architecture)
    url = f"{base}/{params['repo_distro']}/{repo_arch}/"
    toolkit = params.get("toolkit_version") or ""
    plan = {
        "action": action(is_working, meets_min, bool(params.get("replace"))),
        "found_version": nvidia.get("driver_version") or "",
        "found_kernel_module": nvidia.get("kernel_module") or "",
        "working": is_working,
        "tool": nvidia.get("tool") or "",
        "gpu_count": len(nvidia.get("gpus") or []),
        "pci_count": int(pci.get("nvidia_count") or 0),
        "pci_scanned": int(pci.get("scanned") or 0),
        "min_version": min_version,
        "min_version_from": min_from,
        "meets_min": meets_min,
        "fabric_manager": fabric_manager,
        "source": source,
        "branch": branch,
        "kernel_module": module,
        "pre_turing_gpus": older,
        "open_only_gpus": open_only_gpus(probe, architecture),
        "repo": {
            "distro": params["repo_distro"],
            "arch": repo_arch,
            "url": url,
            "key_url": url + params["repo_key"] if params.get("repo_key") and not params.get("repo_trusted") else "",
            "wanted": source == "cuda_repo" or bool(toolkit),
        },
        "pinning_packages": names["pinning"],
        "driver_packages": names["driver"],
        # Unsuffixed names are brought to the newest version the pin allows.
        "package_state": "latest" if names["pinning"] else "present",
        "fabricmanager_packages": names["fabricmanager"] if fabric_manager else [],
        "toolkit_packages": toolkit_packages(toolkit),
        "runfile": runfile(params.get("runfile_src") or "", architecture),
    }
    plan["steps"] = steps(plan, params)
    plan["refusals"] = refusals(plan, params)
    return plan


def steps(plan: Dict[str, Any], params: Dict[str, Any]) -> Dict[str, bool]:
    """Which of the role's steps run: one boolean per step, so the tasks decide nothing.

    ``service_mgr`` (systemd or not), ``persistenced`` (nvidia_persistenced)
    and ``toolkit_found`` (nvcc of the requested toolkit exists) come from
    the role.
    """
    install = plan["action"] == "install"
    source = plan["source"]
    systemd = params.get("service_mgr") == "systemd"
    toolkit_missing = bool(plan["toolkit_packages"]) and not params.get("toolkit_found")
    return {
        "install_packages": install and source in ("cuda_repo", "distro"),
        "install_runfile": install and source == "runfile",
        "pinning": bool(plan["pinning_packages"]),
        # A runfile driver under the packages about to be installed breaks both.
        "look_for_runfile_driver": install and plan["working"],
        "checksum_runfile": install and source == "runfile" and not plan["runfile"]["remote"],
        "toolkit_missing": toolkit_missing,
        "repository": (install and source == "cuda_repo") or toolkit_missing,
        "manage_services": install and systemd,
        "note_no_systemd": install and not systemd,
        "persistenced_unit": install and systemd and bool(params.get("persistenced", True)) and source == "runfile",
    }


def refusals(plan: Dict[str, Any], params: Dict[str, Any]) -> List[str]:
    """Why the request cannot go on, each with its fix; empty when it can.  Checked before any change."""
    out: List[str] = []
    sources = params.get("sources") or []
    if plan["source"] not in sources:
        out.append(f"nvidia_driver_source '{plan['source']}' is not available on {params['distribution']} "
                   f"{params.get('distribution_version', '')} (available: {', '.join(sources)}; 'distro' means "
                   "Ubuntu's nvidia-driver-<branch>-server packages).")
    if plan["action"] == "too_old":
        hint = ""
        if version_cmp(plan["branch"], plan["min_version"]) < 0:
            hint = f" - set nvidia_driver_branch to a branch of at least {plan['min_version']} first"
        out.append(f"The running NVIDIA driver {plan['found_version']} is older than the minimum {plan['min_version']} "
                   f"(from {plan['min_version_from']}). Nothing was changed. Fix: upgrade the driver yourself, or set "
                   f"nvidia_driver_replace: true to install branch {plan['branch']} ({plan['kernel_module']} kernel "
                   f"modules) from {plan['source']}{hint} (a new driver needs a reboot: nvidia_reboot: true, or reboot "
                   "yourself).")
    if plan["action"] == "install" and plan["pci_count"] == 0:
        problems = "; ".join(((params.get("accelerators") or {}).get("summary") or {}).get("problems") or []) or "none"
        out.append(f"No NVIDIA GPU on the PCI bus ({plan['pci_scanned']} PCI functions read) and no working driver: "
                   f"there is nothing to install a driver for. Probe problems: {problems}")
    if plan["source"] == "runfile":
        out.extend(runfile_refusals(plan["runfile"], params, plan["action"]))
    if plan["action"] == "install":
        out.extend(generation_refusals(plan))
    return out


def generation_refusals(plan: Dict[str, Any]) -> List[str]:
    """Maxwell, Pascal and Volta: no open kernel modules, and no driver branch after 580; Grace Hopper and
    Blackwell: no proprietary ones."""
    out = []
    if plan["kernel_module"] == "proprietary" and plan.get("open_only_gpus"):
        out.append(f"nvidia_kernel_module is proprietary, but NVIDIA supports only the open GPU kernel modules on Grace "
                   f"Hopper and Blackwell and this host has {'; '.join(plan['open_only_gpus'])}. Nothing was changed. "
                   "Fix: set nvidia_kernel_module: auto (or open).")
    older = plan["pre_turing_gpus"]
    if not older:
        return out
    gpus = "; ".join(older)
    if plan["kernel_module"] == "open":
        out.append(f"nvidia_kernel_module is open, but the open GPU kernel modules need Turing or newer and this host has "
                   f"{gpus}. Nothing was changed. Fix: set nvidia_kernel_module: proprietary (or auto).")
    branch = plan["runfile"]["version"].split(".")[0] if plan["source"] == "runfile" and plan["runfile"]["version"] \
        else plan["branch"]
    if version_cmp(branch, LAST_PRE_TURING_BRANCH) > 0:
        out.append(f"Driver branch {branch} does not support Maxwell, Pascal or Volta GPUs (580 is the last branch that "
                   f"does) and this host has {gpus}. Nothing was changed. Fix: set nvidia_driver_branch: "
                   f"'{LAST_PRE_TURING_BRANCH}'" + (" and use a 580 runfile." if plan["source"] == "runfile" else "."))
    return out


def runfile_refusals(run: Dict[str, Any], params: Dict[str, Any], planned: str) -> List[str]:
    src, digest = params.get("runfile_src") or "", params.get("runfile_sha256") or ""
    if not src:
        return ["nvidia_driver_source is runfile but nvidia_runfile_src is empty. Nothing was changed."]
    if not run["version"]:
        return [f"nvidia_runfile_src {run['name']} is not named NVIDIA-Linux-<arch>-<version>.run. Nothing was changed."]
    if run["arch"] != run["expected_arch"]:
        return [f"nvidia_runfile_src {run['name']} is for {run['arch']} but this host is {params['architecture']}: "
                f"use NVIDIA-Linux-{run['expected_arch']}-<version>.run. Nothing was changed."]
    if planned == "install" and not _SHA256.match(digest):
        return [f"nvidia_runfile_sha256 must be the 64-hex-digit SHA-256 of {run['name']} (sha256sum prints it); "
                f"got '{digest}'. Nothing was changed."]
    return []


def reboot_pending(plan: Dict[str, Any], live: bool, install_changed: bool, rebooted: bool) -> bool:
    """A driver was installed or changed and the host has not been rebooted into it."""
    return plan["action"] == "install" and not rebooted and (install_changed or not live)


def report(plan: Dict[str, Any], outcome: Dict[str, Any]) -> Dict[str, Any]:
    """The ``kunpeng_nvidia`` fact and the report's sentences after the role ran.

    ``outcome`` holds the probe after the install (``accelerators``) and what
    the role saw: ``owner_rc``/``owner_stdout`` (package owning nvidia-smi),
    ``install_changed``, ``rebooted``, ``service_mgr``, ``kernel_module`` (asked
    for), ``toolkit_version``, ``toolkit_dir``, ``toolkit_missing``,
    ``manage_env_file``, ``env_file``, ``cuda_home``.
    """
    probe = outcome.get("accelerators") or {}
    final = probe.get("nvidia") or {}
    live = working(final)
    systemd = outcome.get("service_mgr") == "systemd"
    adopted = plan["action"] == "adopt"
    fact = {
        "driver_version": final.get("driver_version") or plan["found_version"],
        "kernel_module": final.get("kernel_module") or plan["found_kernel_module"],
        "adopted": adopted,
        "env_file": outcome.get("env_file", "") if outcome.get("manage_env_file", True) else "",
        "cuda_home": outcome.get("cuda_home", ""),
        "action": plan["action"],
        "source": "adopted" if adopted else plan["source"],
        "gpu_count": len(final.get("gpus") or []),
        "reboot_pending": reboot_pending(plan, live, bool(outcome.get("install_changed")), bool(outcome.get("rebooted"))),
        "services_managed": plan["action"] == "install" and systemd,
    }
    return {"kunpeng_nvidia": fact, "report_lines": report_lines(plan, outcome, fact, live, systemd)}


def report_lines(plan: Dict[str, Any], outcome: Dict[str, Any], fact: Dict[str, Any], live: bool, systemd: bool) -> List[str]:
    probe = outcome.get("accelerators") or {}
    final = probe.get("nvidia") or {}
    gpus = final.get("gpus") or []
    lines: List[str] = []
    if fact["adopted"]:
        owner = outcome.get("owner_stdout") or ""
        owned = (f"installed from package {owner.split(':')[0]}" if outcome.get("owner_rc", 1) == 0 and owner
                 else "not installed from a package")
        lines.append(f"adopted driver {fact['driver_version']} ({fact['kernel_module']} kernel module), {owned}")
    elif fact["reboot_pending"]:
        lines.append(f"driver from {plan['source']}: installed, reboot pending (nvidia_reboot is false: reboot the host, "
                     "then run again)")
    else:
        lines.append(f"driver from {plan['source']}: {fact['driver_version']} ({fact['kernel_module']} kernel module) running")
    if gpus:
        names = ", ".join(dict.fromkeys(gpu.get("name") or "" for gpu in gpus))
        lines.append(f"{fact['gpu_count']} GPU(s) {names}, CUDA {final.get('cuda_version') or 'unknown'} supported by the driver")
    else:
        lines.append("nvidia-smi lists no GPU yet")
    if plan["min_version"]:
        lines.append(f"minimum {plan['min_version']} ({plan['min_version_from']}) met")
    wanted = outcome.get("kernel_module") or plan.get("kernel_module") or ""
    if fact["adopted"] and wanted and fact["kernel_module"] != wanted:
        lines.append(f"kernel module is {fact['kernel_module']}, nvidia_kernel_module asks for {wanted}: left as found "
                     "(set nvidia_driver_replace: true to change it)")
    off = [str(gpu.get("index")) for gpu in gpus if gpu.get("persistence_mode") != "Enabled"]
    if live and off:
        lines.append(f"persistence mode is off on GPU(s) {', '.join(off)}")
    if plan["fabric_manager"]:
        lines.append("NVSwitch system: Fabric Manager required")
    if systemd:
        lines.append("services left as found (adopted driver)" if fact["adopted"] else "services enabled through systemd")
    else:
        lines.append(f"service manager is {outcome.get('service_mgr')}, not systemd: service tasks skipped")
    toolkit = outcome.get("toolkit_version") or ""
    if toolkit:
        where = " installed from the CUDA repository" if outcome.get("toolkit_missing") else f" found at {outcome.get('toolkit_dir')}"
        lines.append(f"CUDA toolkit {toolkit}{where}")
    if outcome.get("manage_env_file", True):
        lines.append(f"environment file {outcome.get('env_file')} (CUDA_HOME={outcome.get('cuda_home')})")
    else:
        lines.append("environment file not managed")
    problems = (probe.get("summary") or {}).get("problems") or []
    if problems:
        lines.append("probe problems: " + "; ".join(problems))
    return lines
