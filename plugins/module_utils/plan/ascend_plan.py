# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""The decisions of the ``kunpeng.vllm.ascend`` role, as plain functions.

Which package names fit a host, which version a file name carries, in which
order the components run and with which installer flags, which group the
service user must share with the driver, what the toolkit's ``set_env.sh``
adds to a clean shell, and the sentences the role prints.  The role's task
files only gather inputs (probe, stat, ``env``) and act on what
``kunpeng.vllm.ascend_plan`` returns.

Sources (Huawei, "CANN Software Installation Guide", sections "Preparing
Installation and Running Users" and "Installing the NPU Driver and
Firmware"):

* first installation: driver, then firmware; overwrite installation (the
  driver and firmware already installed): firmware, then driver;
* the driver's running user and group default to ``HwHiAiUser``; another
  user (root included) must be named when installing;
* "if the --install-for-all parameter is not used during driver and firmware
  installation, the running user of the CANN software package and the
  running user of the driver and firmware must be in the same user group";
  CANN installed by root may be run by all users.
"""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

import re
from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.kunpeng.vllm.plugins.module_utils.probe import chips
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import compat_matrix
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.compat_matrix import version_cmp

COMPONENTS = ["driver", "firmware", "toolkit", "kernels", "nnal"]
HDK = ["driver", "firmware"]
CANN = ["toolkit", "kernels", "nnal"]
HDK_FIRST_INSTALL = ["driver", "firmware"]
HDK_UPGRADE = ["firmware", "driver"]

DEFAULT_INSTALL_PATH = "/usr/local/Ascend"

# Host architecture -> how Huawei spells it in CANN names (<arch>) and HDK names (<hdk_arch>).
ARCH_TOKENS: Dict[str, Dict[str, str]] = {
    "aarch64": {"arch": "aarch64", "hdk_arch": "aarch64"},
    "x86_64": {"arch": "x86_64", "hdk_arch": "x86-64"},
}

# Package file names per package stem (chips.py) and component.  Several
# entries mean several accepted names: kernels became "ops" from CANN 8.5.0.
# Atlas A3 packages are named "Atlas-A3-..." (Huawei's download pages and
# vllm-ascend's installation guide).
PACKAGE_NAMES: Dict[str, Dict[str, List[str]]] = {
    "910b": {
        "driver": ["Ascend-hdk-910b-npu-driver_<version>_linux-<hdk_arch>.run"],
        "firmware": ["Ascend-hdk-910b-npu-firmware_<version>.run"],
        "kernels": ["Ascend-cann-kernels-910b_<version>_linux-<arch>.run", "Ascend-cann-910b-ops_<version>_linux-<arch>.run"],
    },
    "A3": {
        "driver": ["Atlas-A3-hdk-npu-driver_<version>_linux-<hdk_arch>.run"],
        "firmware": ["Atlas-A3-hdk-npu-firmware_<version>.run"],
        "kernels": ["Atlas-A3-cann-kernels_<version>_linux-<arch>.run", "Ascend-cann-A3-ops_<version>_linux-<arch>.run"],
    },
    "310p": {
        "driver": ["Ascend-hdk-310p-npu-driver_<version>_linux-<hdk_arch>.run"],
        "firmware": ["Ascend-hdk-310p-npu-firmware_<version>.run"],
        "kernels": ["Ascend-cann-kernels-310p_<version>_linux-<arch>.run", "Ascend-cann-310p-ops_<version>_linux-<arch>.run"],
    },
}
COMMON_PACKAGE_NAMES: Dict[str, List[str]] = {
    "toolkit": ["Ascend-cann-toolkit_<version>_linux-<arch>.run"],
    "nnal": ["Ascend-cann-nnal_<version>_linux-<arch>.run"],
}

# Every Huawei package name is <prefix>_<version>[_linux-<arch>].run.
_VERSION_FROM_NAME = re.compile(r"^[^_]+_([0-9][0-9A-Za-z.]*?)(?:_linux-[0-9A-Za-z_-]+)?\.run$")

# Where the kernels/ops and NNAL packages record their version, below the
# install prefix: KEY=VALUE with version_dir=<package version>, and
# "Ascend-cann-atb : <version>" lines.
KERNELS_VERSION_FILE = "ascend-toolkit/latest/opp_kernel/version.info"
NNAL_VERSION_FILE = "nnal/atb/latest/version.info"
_KERNELS_VERSION = re.compile(r"(?mi)^\s*version_dir\s*=\s*(\S+)")
_NNAL_VERSION = re.compile(r"(?m)^\s*Ascend-cann-atb\s*:\s*(\S+)")

TOOLKIT_SET_ENV = "ascend-toolkit/set_env.sh"
NNAL_SET_ENV = "nnal/atb/set_env.sh"

# Device nodes the driver creates besides one /dev/davinci<N> per chip (N is
# the chip's logic id); Huawei's container guides (MindIE, Ascend Docker
# Runtime) pass exactly these to a workload.
DRIVER_DEVICE_NODES = ["/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc"]

# Separates the environment before and after sourcing set_env.sh in the dump.
ENV_MARKER = "--- kunpeng.vllm.ascend: after set_env.sh ---"
# Variables of a shell that say nothing about Ascend.
ENV_IGNORED = ["_", "SHLVL", "PWD", "OLDPWD"]
_ENV_LINE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$")


class AscendPlanError(Exception):
    """A request the role must refuse before any change; the message names the variable and the fix."""


# --- package names -----------------------------------------------------------------------------

def version_from_name(file_name: str) -> str:
    """The version in a Huawei package name (``..._8.1.RC1_linux-aarch64.run`` -> ``8.1.RC1``), '' if none."""
    match = _VERSION_FROM_NAME.match(_basename(file_name))
    return match.group(1) if match else ""


def _basename(path: Any) -> str:
    return str(path or "").rsplit("/", 1)[-1]


def name_templates(stem: str, component: str) -> List[str]:
    """The accepted name templates of one component for one package stem."""
    if component in COMMON_PACKAGE_NAMES:
        return list(COMMON_PACKAGE_NAMES[component])
    return list(PACKAGE_NAMES[stem][component])


def _fill(template: str, tokens: Dict[str, str], version: Optional[str] = None) -> str:
    text = template.replace("<arch>", tokens["arch"]).replace("<hdk_arch>", tokens["hdk_arch"])
    return text if version is None else text.replace("<version>", version)


def expected_names(stem: str, component: str, arch: str, version: Optional[str] = None) -> List[str]:
    """Names a package must have on this host; ``<version>`` stays a placeholder when ``version`` is None."""
    return [_fill(template, ARCH_TOKENS[arch], version) for template in name_templates(stem, component)]


def identify_package(file_name: str, component: str) -> str:
    """Which series and architecture a package name was built for (``910b x86_64``, ``x86_64``, ``310p``), '' if none."""
    name = _basename(file_name)
    version = version_from_name(name)
    found: List[str] = []
    for stem in PACKAGE_NAMES:
        for arch, tokens in ARCH_TOKENS.items():
            for template in name_templates(stem, component):
                if _fill(template, tokens, version) != name:
                    continue
                if "arch>" not in template:
                    label = stem
                elif component in COMMON_PACKAGE_NAMES:
                    label = arch
                else:
                    label = f"{stem} {arch}"
                if label not in found:
                    found.append(label)
    return " / ".join(found)


def host_stem(ascend_chips: List[str], requested: str = "") -> str:
    """The package stem of the host: ``ascend_series`` when set, else the one of the chips on the PCI bus."""
    if requested:
        return requested
    stems: List[str] = []
    for chip in ascend_chips:
        stem = chips.stem_of_chip(chip)
        if stem and stem not in stems:
            stems.append(stem)
    return ",".join(stems)


def check_settings(packages: Dict[str, Any], package_source: str, package_dir: str, base_url: str) -> None:
    """Refuse malformed ``ascend_packages`` and a package source without its location."""
    unknown = sorted(set(packages) - set(COMPONENTS))
    without_file = sorted(key for key, value in packages.items() if not isinstance(value, dict) or not value.get("file"))
    problems = []
    if unknown:
        problems.append(f"unknown component(s) {', '.join(unknown)}")
    if without_file:
        problems.append(f"no file: for {', '.join(without_file)}")
    # a file name, not a path: it names the file in the package directory, the download and the staging directory
    names = {key: str(value.get("file") or "") for key, value in packages.items() if isinstance(value, dict)}
    pathed = sorted(key for key, name in names.items() if "/" in name or name in (".", ".."))
    if pathed:
        problems.append(f"file: must be a file name, not a path, for {', '.join(pathed)}")
    if packages and package_source == "url" and not base_url:
        problems.append("ascend_package_source 'url' needs ascend_package_base_url")
    # Downloaded packages are run as root (bash <package> --check, then the installer): a download is trusted for its
    # pinned sha256 only, as an engine artifact's is (review round 6: none was needed, and http:// was accepted).
    sums = {key: str(value.get("sha256") or "") for key, value in packages.items() if isinstance(value, dict)}
    pinned = {key for key, value in sums.items() if re.match(r"^[0-9a-fA-F]{64}$", value)}
    unpinned = sorted(set(packages) - pinned - set(without_file))
    if packages and package_source == "url" and unpinned:
        problems.append(f"ascend_package_source 'url' runs the downloaded packages as root, so each needs its sha256: "
                        f"(sha256sum of the file Huawei publishes); none for {', '.join(unpinned)}")
    if packages and package_source != "url" and not package_dir:
        problems.append(f"ascend_package_source '{package_source}' needs ascend_package_dir")
    if problems:
        raise AscendPlanError(
            f"ascend_packages takes the keys {', '.join(COMPONENTS)}, each with a file name (file:) and optionally "
            f"sha256: and version:; {'; '.join(problems)}. Nothing was changed.")


def check_packages(packages: Dict[str, Any], stem: str, arch: str, ascend_chips: List[str]) -> None:
    """Refuse a host whose package series is unknown and every package not built for its series and architecture."""
    if not packages:
        return
    if stem not in PACKAGE_NAMES or arch not in ARCH_TOKENS:
        seen = ", ".join(ascend_chips) if ascend_chips else "no Ascend chip"
        supported = ", ".join(row.chip for row in chips.CHIPS if row.package_stem)
        raise AscendPlanError(
            f"Cannot tell which Ascend packages fit this host: PCI shows {seen} (series '{stem}'), architecture {arch}. "
            f"Supported are {supported} on {' or '.join(ARCH_TOKENS)}; set ascend_series to one of "
            f"{', '.join(chips.PACKAGE_STEMS)} when the chips are not visible yet (e.g. in a VM without passthrough).")
    problems = []
    for component in COMPONENTS:
        if component not in packages:
            continue
        name = _basename(packages[component]["file"])
        if name in expected_names(stem, component, arch, version_from_name(name)):
            continue
        identified = identify_package(name, component)
        what = f"is the {identified} package" if identified else f"is not a recognised Ascend {component} package name"
        problems.append(
            f"ascend_packages.{component}.file '{name}' {what}, but this host is series {stem} "
            f"({', '.join(ascend_chips) or 'set by ascend_series'}) on {arch}. Use the package named "
            f"{' or '.join(expected_names(stem, component, arch))} from Huawei's download for this series and architecture.")
    if problems:
        raise AscendPlanError(" ".join(problems) + " Nothing was changed.")


def check_files(packages: Dict[str, Any], stats: Dict[str, Any], package_source: str, package_dir: str) -> None:
    """Refuse a package that is missing or whose sha256 differs from ``ascend_packages.<c>.sha256``.

    ``stats`` maps a component to the ``stat`` of its file (``exists``,
    ``checksum`` in sha256); components without a stat (URL source: the
    download checks the sum) are not judged here.
    """
    problems = []
    for component in COMPONENTS:
        stat = stats.get(component)
        if component not in packages or stat is None:
            continue
        path = f"{package_dir.rstrip('/')}/{packages[component]['file']}"
        expected = str(packages[component].get("sha256") or "").strip().lower()
        if not stat.get("exists"):
            problems.append(f"ascend_packages.{component}: {path} does not exist on the {package_source}; put the package there "
                            "or fix ascend_package_dir.")
        elif expected and expected != str(stat.get("checksum") or "").lower():
            problems.append(f"ascend_packages.{component}: sha256 of {path} is {stat.get('checksum')}, expected {expected}. "
                            "The file is damaged or not the release you meant: download it again (compare with Huawei's "
                            f"published checksum) or correct ascend_packages.{component}.sha256.")
    if problems:
        raise AscendPlanError(" ".join(problems) + " Nothing was changed.")


def wanted_versions(packages: Dict[str, Any]) -> Dict[str, str]:
    """Component -> the version it will report once installed (``version:`` when given, else the file name's)."""
    return {component: str(spec.get("version") or version_from_name(spec["file"]))
            for component, spec in packages.items() if component in COMPONENTS}


def supplied_cann(packages: Dict[str, Any]) -> Tuple[str, str]:
    """The CANN release ``ascend_packages`` installs (its toolkit's version) and where that is read; ``('', '')`` without a toolkit.

    The ascend role installs these packages before the engine, so the engine's compatibility row must fit this
    release, not the one installed now (none on a bare host).
    """
    spec = packages.get("toolkit") if isinstance(packages, dict) else None
    if not isinstance(spec, dict) or not spec.get("file"):
        return "", ""
    version = wanted_versions({"toolkit": spec})["toolkit"]
    if not version:
        return "", ""
    if spec.get("version"):
        return version, "ascend_packages.toolkit.version"
    return version, f"ascend_packages.toolkit ({_basename(spec['file'])})"


def check_engine_version(packages: Dict[str, Any], engine_version: str = "") -> None:
    """Refuse an engine release (the vllm role's ``vllm_version``: the vllm-ascend row) that the CANN of
    ``ascend_packages`` cannot run, before anything is installed; nothing to check without either."""
    cann, source = supplied_cann(packages)
    if not cann or not engine_version:
        return
    try:
        compat_matrix.select_ascend(vllm_ascend_version=engine_version, cann_version=cann, cann_source=source)
    except compat_matrix.CompatError as exc:
        raise AscendPlanError(f"vllm_version {engine_version}: {exc}. Nothing was changed.") from None


def package_paths(packages: Dict[str, Any], package_source: str, package_dir: str, staging_dir: str) -> Dict[str, str]:
    """Component -> path of its package on the managed host (staged unless the source is the host)."""
    base = (package_dir if package_source == "host" else staging_dir).rstrip("/")
    return {component: f"{base}/{spec['file']}" for component, spec in packages.items()}


# --- installed versions and the plan ----------------------------------------------------------

def _first(pattern: "re.Pattern[str]", text: Optional[str]) -> str:
    match = pattern.search(text or "")
    return match.group(1) if match else ""


def installed_versions(ascend: Dict[str, Any], kernels_info: Optional[str], nnal_info: Optional[str]) -> Dict[str, str]:
    """Component -> installed version ('' when absent), from ``kunpeng_accelerators.ascend`` and the CANN files."""
    versions = ascend.get("versions") or {}

    def value(section: str, key: str) -> str:
        data = versions.get(section) or {}
        for name, found in data.items():
            if name.lower() == key.lower():
                return str(found or "")
        return ""

    return {
        "driver": value("driver", "Version"),
        "firmware": value("firmware", "Version"),
        "toolkit": str(ascend.get("cann_version") or ""),
        "kernels": _first(_KERNELS_VERSION, kernels_info),
        "nnal": _first(_NNAL_VERSION, nnal_info),
    }


def install_order(driver_installed: bool) -> List[str]:
    """Huawei's order: driver -> firmware on a first install, firmware -> driver over an installed driver; then CANN."""
    return (HDK_UPGRADE if driver_installed else HDK_FIRST_INSTALL) + CANN


def needs_run(component: str, installed: str, wanted: str, install_record: Dict[str, Any]) -> bool:
    """Whether a component's installer must run: versions differ, or the driver's last install did not complete."""
    if not installed or version_cmp(installed, wanted) != 0:
        return True
    status = str((install_record or {}).get("Driver_Install_Status") or "complete")
    return component == "driver" and status != "complete"


def plan_components(installed: Dict[str, str], wanted: Dict[str, str], install_record: Dict[str, Any]) -> List[str]:
    """The components to run, in order."""
    return [component for component in install_order(bool(installed.get("driver")))
            if component in wanted and needs_run(component, installed.get(component, ""), wanted[component], install_record)]


def install_mode(installed: str) -> str:
    return "upgrade" if installed else "install"


def installer_flags(component: str, mode: str, install_user: str, install_group: str,
                    install_path: str = DEFAULT_INSTALL_PATH) -> List[str]:
    """The installer's arguments.

    The driver runs for ``install_user``/``install_group``.  Only a root run
    user gets ``--install-for-all`` (Huawei: a user other than HwHiAiUser,
    root included, must be named; with root every user needs access).  For
    a non-root run user the devices stay with its group, and services join
    that group (:func:`device_group`) instead of opening the devices to all.
    """
    if mode == "upgrade":
        own = ["--upgrade"]
    elif component == "driver":
        own = ["--full", f"--install-username={install_user}", f"--install-usergroup={install_group}"]
        if install_user == "root":
            own.append("--install-for-all")
    elif component == "firmware":
        own = ["--full"]
    else:
        own = ["--install"] + (["--install-for-all"] if install_user == "root" else [])
    path = [] if install_path.rstrip("/") == DEFAULT_INSTALL_PATH else [f"--install-path={install_path}"]
    return ["--nox11"] + own + path + ["--quiet"]


def installer_argv(component: str, package_path: str, flags: List[str], toolkit_set_env: Optional[str]) -> List[str]:
    """The command of one installer; NNAL installs against the toolkit, so it runs with set_env.sh sourced."""
    if component == "nnal" and toolkit_set_env:
        return ["bash", "-c", '. "$1" >/dev/null 2>&1; shift; exec bash "$@"', "ascend-nnal", toolkit_set_env,
                package_path] + flags
    return ["bash", package_path] + flags


def device_group(install_user: str, install_group: str, install_record: Optional[Dict[str, Any]] = None) -> str:
    """The group a service user must join to open the NPUs; '' when the driver is installed for all users.

    The driver's own record (``/etc/ascend_install.info``: ``UserGroup``,
    ``Driver_Install_For_All``) wins over the role's settings, so a driver
    installed earlier, by hand or for another user, is described as it is.
    """
    record = install_record or {}
    if record.get("UserGroup"):
        for_all = str(record.get("Driver_Install_For_All") or "no").strip().lower() in ("yes", "true", "1")
        return "" if for_all else str(record["UserGroup"])
    return "" if install_user == "root" else install_group


def device_nodes(ascend: Dict[str, Any], pci_count: int = 0) -> List[str]:
    """Device nodes a service needs: one /dev/davinci<logic id> per chip, then the driver's shared nodes."""
    ids = sorted(set(int(d["logic_id"]) for d in ascend.get("devices") or [] if d.get("logic_id") is not None))
    if not ids:
        ids = list(range(max(int(ascend.get("chip_count") or 0), pci_count)))
    return [f"/dev/davinci{index}" for index in ids] + list(DRIVER_DEVICE_NODES)


def reboot_needed(component: str, installer_output: str) -> bool:
    """Firmware always needs a reboot to load; the driver when its installer says so."""
    return component == "firmware" or (component == "driver" and "reboot" in (installer_output or "").lower())


# --- the service environment --------------------------------------------------------------------

def parse_env(text: str) -> Dict[str, str]:
    """``env`` output -> dict (continuation lines of multi-line values are dropped)."""
    result: Dict[str, str] = {}
    for line in (text or "").splitlines():
        match = _ENV_LINE.match(line)
        if match:
            result[match.group(1)] = match.group(2)
    return result


def env_diff(output: str, marker: str = ENV_MARKER, ignored: Optional[List[str]] = None) -> Dict[str, str]:
    """Variables set or changed between the two ``env`` dumps around ``marker``.

    Empty components of ``*PATH`` variables (a set_env.sh appending to an
    unset ``LD_LIBRARY_PATH`` leaves a trailing ':') mean "the current
    directory": dropped, a service must not load libraries from its working
    directory.
    """
    ignored = ENV_IGNORED if ignored is None else ignored
    if marker + "\n" not in output:
        raise AscendPlanError(f"the environment dump has no marker line '{marker}'")
    before_text, after_text = output.split(marker + "\n", 1)
    before, after = parse_env(before_text), parse_env(after_text)
    env: Dict[str, str] = {}
    for key, value in after.items():
        if key in ignored or before.get(key) == value:
            continue
        env[key] = ":".join(part for part in value.split(":") if part) if key.endswith("PATH") else value
    return env


# --- sentences and the exported fact -----------------------------------------------------------

def plan_message(stem: str, arch: str, plan: List[str], installed: Dict[str, str], wanted: Dict[str, str]) -> str:
    steps = [f"{c} {installed.get(c) or '-'} -> {wanted[c]} ({install_mode(installed.get(c, ''))})" for c in plan]
    return f"Ascend {stem or '-'} on {arch}: {', '.join(steps) if steps else 'nothing to install'}"


def reboot_message(changed: List[str]) -> str:
    """What to tell the operator while a reboot is pending (``changed``: this run's components, [] for an earlier run's)."""
    if changed:
        what = f"{', '.join(changed)} changed: reboot the host to load them"
    else:
        what = "An earlier run changed the firmware or driver and the host has not rebooted since: reboot it to load them"
    return f"{what} (or set ascend_reboot: true). The device check is skipped until then."


def device_problems(ascend: Dict[str, Any], pci_count: int) -> List[str]:
    """Why the NPUs are not all usable ([] when every chip is healthy and npu-smi sees all of them)."""
    problems = []
    if not ascend.get("tool"):
        problems.append("npu-smi not found")
    count = int(ascend.get("chip_count") or 0)
    if count == 0 or count != pci_count:
        problems.append(f"npu-smi reports {count} chip(s) for {pci_count} on the PCI bus")
    unhealthy = [str(d.get("npu_id")) for d in ascend.get("devices") or [] if d.get("health") != "OK"]
    if unhealthy:
        problems.append(f"unhealthy NPU(s): {', '.join(unhealthy)}")
    return problems


def verify_steps(ran: bool, verify_devices: bool, driver_version: Optional[str], pending_reboot: bool,
                 rebooted: bool) -> Dict[str, bool]:
    """Which verify steps run: ``reprobe`` (an installer ran, or the devices are checked) and ``check_devices``
    (asked for, a driver answers, and no reboot is still waiting: none was pending, or the host rebooted).
    """
    return {
        "reprobe": ran or verify_devices,
        "check_devices": verify_devices and bool(driver_version) and (not pending_reboot or rebooted),
    }


def report(ascend: Dict[str, Any], installed: Dict[str, str], stem: str, changed: List[str], env_file: str,
           reboot_needed_now: bool, rebooted: bool, marker_present: bool, group: str, nodes: List[str]) -> Dict[str, Any]:
    """The ``kunpeng_ascend`` fact.

    ``reboot_required``: this run changed firmware or driver and did not
    reboot.  ``reboot_pending``: that, or an earlier run left a reboot
    pending that has not happened yet (its marker under /run survives until
    the next boot).
    """
    required = reboot_needed_now and not rebooted
    return {
        "driver_version": ascend.get("driver_version"),
        "firmware_version": ascend.get("firmware_version"),
        "cann_version": ascend.get("cann_version"),
        "kernels_version": installed.get("kernels") or None,
        "nnal_version": installed.get("nnal") or None,
        "nnal_installed": bool(installed.get("nnal")),
        "env_file": env_file,
        "series": stem or None,
        "changed": list(changed),
        "reboot_required": required,
        "reboot_pending": required or (marker_present and not rebooted),
        "device_group": group,
        "device_nodes": nodes,
    }
