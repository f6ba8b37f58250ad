#!/usr/bin/python
# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

DOCUMENTATION = r"""
---
module: ascend_plan
short_description: Decide what the Ascend role installs, in which order and how, and what it reports
version_added: "0.1.0"
description:
  - The decisions of the C(kunpeng.vllm.ascend) role. It reads only; the role runs the installers it plans.
  - Checks each package of O(packages) against O(package_stats) (present, sha256 as declared) and identifies it by its
    file name (series and architecture, see the chip table in
    C(plugins/module_utils/probe/chips.py)) and fails, before any change, when a package is not built for the host's series
    (from the PCI chips, or O(series)) and CPU architecture, with the names that would fit.
  - Reads the installed versions (from the probe in O(accelerators) and the kernels/ops and NNAL version files under
    O(install_path)) and plans the components whose version differs from the package's, compared with the collection's
    vendor version comparator (C(8.1.RC1) equals C(8.1.rc1), C(8.3.RC2) sorts before C(8.3.0)). A driver whose last
    install did not complete (C(Driver_Install_Status) in C(/etc/ascend_install.info)) runs again.
  - "Order, as Huawei's CANN Software Installation Guide requires: driver then firmware on a first install, firmware then
    driver when a driver is installed, then toolkit, kernels/ops, NNAL."
  - Returns each installer's command line. The driver runs for O(install_user)/O(install_group); only a C(root) run user
    gets C(--install-for-all). Otherwise the NPUs stay with O(install_group), which services must join
    (RV(device_group)), as Huawei's guide requires of users of a driver installed without C(--install-for-all).
  - Given O(env_output), computes the variables the toolkit's and NNAL's C(set_env.sh) add to a clean shell
    (RV(environment)).
  - Given O(runs), says which components changed and whether a reboot is needed, and builds the C(kunpeng_ascend) fact
    (RV(report)).
author:
  - kunpeng.vllm maintainers (@kunpeng-vllm)
extends_documentation_fragment:
  - kunpeng.vllm.attributes.read_only
options:
  accelerators:
    description:
      - The C(kunpeng_accelerators) fact of M(kunpeng.vllm.accelerator_facts) (PCI chips, CPU architecture, the Ascend
        probe with its version files and C(/etc/ascend_install.info)).
    type: dict
    required: true
  packages:
    description:
      - The role's C(ascend_packages), keys C(driver), C(firmware), C(toolkit), C(kernels), C(nnal), each a dict with
        C(file) and optionally C(sha256) and C(version).
    type: dict
    default: {}
  package_source:
    description: Where the packages are (C(controller), C(host) or C(url)); decides their path on the host.
    type: str
    choices: [controller, host, url]
    default: controller
  package_dir:
    description: Directory of the packages (controller or host).
    type: str
    default: ""
  package_stats:
    description:
      - The C(results) of M(ansible.builtin.stat) looped over C(ascend_packages | dict2items) with C(checksum_algorithm=sha256),
        on the controller or the host; skipped items are ignored. A missing file or a sha256 other than the package's
        C(sha256) fails.
    type: list
    elements: dict
    default: []
  package_base_url:
    description: Base URL of the artifact server (C(url) source).
    type: str
    default: ""
  staging_dir:
    description: Where controller and URL packages are put on the host.
    type: path
    default: /var/cache/kunpeng-vllm/ascend
  series:
    description: Package stem to use instead of the PCI chips' (C(910b), C(A3), C(310p)); empty means the chips'.
    type: str
    default: ""
  install_path:
    description: Install prefix of all components.
    type: path
    default: /usr/local/Ascend
  install_user:
    description: Run user of the driver.
    type: str
    default: HwHiAiUser
  install_group:
    description: Group of the run user.
    type: str
    default: HwHiAiUser
  runs:
    description:
      - The installers that ran in this play, in order, each a dict with C(component) and C(stdout).
    type: list
    elements: dict
    default: []
  rebooted:
    description: Whether the role rebooted the host after O(runs).
    type: bool
    default: false
  reboot_marker:
    description:
      - A file under C(/run) that the role leaves when a reboot is pending; since C(/run) is emptied at boot, its
        presence means an earlier run's firmware or driver still waits for a reboot.
    type: path
    default: /run/kunpeng-vllm/ascend-reboot-pending
  env_output:
    description:
      - Output of C(env), a line O(env_marker), then C(env) again after sourcing the C(set_env.sh) scripts.
    type: str
  env_marker:
    description: The separator line in O(env_output).
    type: str
    default: "--- kunpeng.vllm.ascend: after set_env.sh ---"
  env_file:
    description: The environment file the role wrote ('' when none), for RV(report).
    type: str
    default: ""
  verify_devices:
    description: Whether the devices are checked after the install (C(ascend_verify_devices)); for RV(verify).
    type: bool
    default: false
  pending_reboot:
    description: Whether a reboot was pending before this check (C(report.reboot_pending) of the call with O(runs)); for RV(verify).
    type: bool
    default: false
  engine_version:
    description:
      - The vllm role's C(vllm_version) (on Ascend, the vllm-ascend release), when the play sets it. A release the CANN
        of O(packages)' toolkit (its C(version), else the version in its file name) cannot run fails before anything
        is installed, naming a release that fits.
    type: str
    default: ""
notes:
  - No NPU is reachable from the collection's CI; the decisions are tested on recorded C(npu-smi) output and sysfs trees.
seealso:
  - module: kunpeng.vllm.accelerator_facts
"""

EXAMPLES = r"""
- name: Probe the host
  kunpeng.vllm.accelerator_facts:

- name: Plan the Ascend install
  kunpeng.vllm.ascend_plan:
    accelerators: "{{ kunpeng_accelerators }}"
    packages:
      driver: {file: Ascend-hdk-910b-npu-driver_25.0.rc1.1_linux-aarch64.run}
      firmware: {file: Ascend-hdk-910b-npu-firmware_7.7.0.1.231.run}
    package_dir: /srv/ascend
  register: plan

- name: Show the order
  ansible.builtin.debug:
    msg: "{{ plan.message }}"   # Ascend 910b on aarch64: firmware 7.1.0.11.220 -> 7.7.0.1.231 (upgrade), ...

- name: Compute the service environment from an env dump
  kunpeng.vllm.ascend_plan:
    accelerators: "{{ kunpeng_accelerators }}"
    env_output: "{{ env_dump.stdout }}"
  register: env_plan
"""

RETURN = r"""
series:
  description: The package stem of the host (C(910b), C(A3), C(310p)); '' when unknown.
  returned: always
  type: str
  sample: 910b
arch:
  description: CPU architecture the packages must be built for.
  returned: always
  type: str
  sample: aarch64
installed:
  description: Installed version of each component ('' when absent).
  returned: always
  type: dict
  sample: {"driver": "24.1.rc1", "firmware": "7.1.0.11.220", "toolkit": "8.1.RC1", "kernels": "", "nnal": ""}
wanted:
  description: Version each requested component will have (its C(version), else the one in its file name).
  returned: always
  type: dict
  sample: {"driver": "25.0.rc1.1", "firmware": "7.7.0.1.231"}
plan:
  description: Components whose installer must run, in order.
  returned: always
  type: list
  elements: str
  sample: [firmware, driver]
steps:
  description: Per planned component, C(component), C(mode) (C(install) or C(upgrade)), C(from), C(to) and C(argv).
  returned: always
  type: list
  elements: dict
  sample: [{"component": "firmware", "mode": "upgrade", "from": "7.1.0.11.220", "to": "7.7.0.1.231",
            "argv": ["bash", "/var/cache/kunpeng-vllm/ascend/Ascend-hdk-910b-npu-firmware_7.7.0.1.231.run", "--nox11", "--upgrade", "--quiet"]}]
package_paths:
  description: Path of each requested package on the host.
  returned: always
  type: dict
  sample: {"firmware": "/var/cache/kunpeng-vllm/ascend/Ascend-hdk-910b-npu-firmware_7.7.0.1.231.run"}
message:
  description: The plan in one sentence.
  returned: always
  type: str
  sample: "Ascend 910b on aarch64: firmware 7.1.0.11.220 -> 7.7.0.1.231 (upgrade), driver 24.1.rc1 -> 25.0.rc1.1 (upgrade)"
device_group:
  description:
    - Group a service user must join to open the NPUs; '' when the driver is installed for all users.
    - Read from the driver's record (C(UserGroup), C(Driver_Install_For_All) of C(/etc/ascend_install.info)) when there is
      one, else the group the role installs the driver for (none for a C(root) run user, which gets C(--install-for-all)).
  returned: always
  type: str
  sample: HwHiAiUser
device_nodes:
  description: Device nodes a service needs, C(/dev/davinci<N>) per chip then C(davinci_manager), C(devmm_svm), C(hisi_hdc).
  returned: always
  type: list
  elements: str
  sample: [/dev/davinci0, /dev/davinci_manager, /dev/devmm_svm, /dev/hisi_hdc]
device_problems:
  description: Why the NPUs are not all usable (no npu-smi, fewer chips than on the PCI bus, unhealthy chips); empty when fine.
  returned: always
  type: list
  elements: str
  sample: ["npu-smi reports 6 chip(s) for 8 on the PCI bus"]
changed_components:
  description: Components of O(runs) (the report's C(changed)).
  returned: always
  type: list
  elements: str
  sample: [firmware, driver]
reboot_required:
  description: Whether O(runs) changed the firmware, or the driver installer asked for a reboot.
  returned: always
  type: bool
  sample: true
reboot_message:
  description: What to tell the operator when the reboot is not done by the role.
  returned: always
  type: str
  sample: "firmware, driver changed: reboot the host to load them (or set ascend_reboot: true). The device check is skipped until then."
installs:
  description: Whether any component is planned (RV(plan) is not empty).
  returned: always
  type: bool
  sample: true
ran:
  description: Whether any installer ran (O(runs) is not empty).
  returned: always
  type: bool
  sample: false
verify:
  description:
    - Which verify steps run. C(reprobe) - an installer ran or O(verify_devices). C(check_devices) - O(verify_devices), the
      probe shows a driver, and no reboot still waits (O(pending_reboot) false, or O(rebooted)).
  returned: always
  type: dict
  sample: {"reprobe": true, "check_devices": true}
environment:
  description: Variables the C(set_env.sh) scripts set or changed, empty C(PATH) components removed.
  returned: when O(env_output) is given
  type: dict
  sample: {"ASCEND_TOOLKIT_HOME": "/usr/local/Ascend/ascend-toolkit/latest"}
report:
  description:
    - The C(kunpeng_ascend) fact, keys C(driver_version), C(firmware_version), C(cann_version), C(kernels_version),
      C(nnal_version), C(nnal_installed), C(env_file), C(series), C(changed), C(reboot_required), C(reboot_pending)
      (this run's reboot not done, or an earlier run's still pending), C(device_group) and C(device_nodes).
  returned: always
  type: dict
  sample: {"driver_version": "25.0.rc1.1", "firmware_version": "7.7.0.1.231", "cann_version": "8.2.RC1",
           "kernels_version": "8.2.RC1", "nnal_version": "8.2.RC1", "nnal_installed": true, "env_file": "/etc/vllm/ascend.env",
           "series": "910b", "changed": ["firmware", "driver"], "reboot_required": true, "reboot_pending": true,
           "device_group": "HwHiAiUser", "device_nodes": ["/dev/davinci0", "/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc"]}
"""

import os  # noqa: E402
from typing import Any, Dict, Optional  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import ascend_plan as ap  # noqa: E402


def _read(path: str) -> Optional[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError:
        return None


def decide(params: Dict[str, Any]) -> Dict[str, Any]:
    """Everything the module returns, from its parameters (raises AscendPlanError on a refusal)."""
    facts = params["accelerators"] or {}
    ascend = facts.get("ascend") or {}
    pci = facts.get("pci") or {}
    arch = str((facts.get("cpu") or {}).get("architecture") or "")
    ascend_chips = list(pci.get("ascend_chips") or [])
    packages = params["packages"] or {}
    ap.check_settings(packages, params["package_source"], params["package_dir"], params["package_base_url"])
    stem = ap.host_stem(ascend_chips, params["series"])
    ap.check_packages(packages, stem, arch, ascend_chips)
    stats = {str((result.get("item") or {}).get("key")): result["stat"] for result in params["package_stats"] or [] if "stat" in result}
    ap.check_files(packages, stats, params["package_source"], params["package_dir"])
    ap.check_engine_version(packages, params["engine_version"])

    root = params["install_path"]
    installed = ap.installed_versions(ascend, _read(os.path.join(root, ap.KERNELS_VERSION_FILE)),
                                      _read(os.path.join(root, ap.NNAL_VERSION_FILE)))
    wanted = ap.wanted_versions(packages)
    record = (ascend.get("versions") or {}).get("install_info") or {}
    plan = ap.plan_components(installed, wanted, record)
    paths = ap.package_paths(packages, params["package_source"], params["package_dir"], params["staging_dir"])
    toolkit_env = os.path.join(root, ap.TOOLKIT_SET_ENV)
    toolkit_there = bool(installed["toolkit"]) or "toolkit" in plan
    steps = []
    for component in plan:
        mode = ap.install_mode(installed[component])
        flags = ap.installer_flags(component, mode, params["install_user"], params["install_group"], root)
        steps.append({"component": component, "mode": mode, "from": installed[component], "to": wanted[component],
                      "argv": ap.installer_argv(component, paths[component], flags, toolkit_env if toolkit_there else None)})

    runs = params["runs"] or []
    changed = [str(run.get("component")) for run in runs]
    reboot_now = any(ap.reboot_needed(str(run.get("component")), str(run.get("stdout") or "")) for run in runs)
    group = ap.device_group(params["install_user"], params["install_group"], record)
    nodes = ap.device_nodes(ascend, int(pci.get("ascend_count") or 0))
    result: Dict[str, Any] = {
        "series": stem, "arch": arch, "installed": installed, "wanted": wanted, "plan": plan, "steps": steps,
        "package_paths": paths, "message": ap.plan_message(stem, arch, plan, installed, wanted),
        "device_group": group, "device_nodes": nodes,
        "device_problems": ap.device_problems(ascend, int(pci.get("ascend_count") or 0)),
        "changed_components": changed, "reboot_required": reboot_now, "reboot_message": ap.reboot_message(changed),
        "installs": bool(plan), "ran": bool(runs),
        "verify": ap.verify_steps(bool(runs), params["verify_devices"], ascend.get("driver_version"),
                                  params["pending_reboot"], params["rebooted"]),
    }
    if params.get("env_output") is not None:
        result["environment"] = ap.env_diff(params["env_output"], params["env_marker"])
    result["report"] = ap.report(ascend, installed, stem, changed, params["env_file"], reboot_now, params["rebooted"],
                                 os.path.exists(params["reboot_marker"]), group, nodes)
    return result


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            accelerators=dict(type="dict", required=True),
            packages=dict(type="dict", default={}),
            package_source=dict(type="str", default="controller", choices=["controller", "host", "url"]),
            package_dir=dict(type="str", default=""),
            package_base_url=dict(type="str", default=""),
            package_stats=dict(type="list", elements="dict", default=[]),
            staging_dir=dict(type="path", default="/var/cache/kunpeng-vllm/ascend"),
            series=dict(type="str", default=""),
            install_path=dict(type="path", default="/usr/local/Ascend"),
            install_user=dict(type="str", default="HwHiAiUser"),
            install_group=dict(type="str", default="HwHiAiUser"),
            runs=dict(type="list", elements="dict", default=[]),
            rebooted=dict(type="bool", default=False),
            reboot_marker=dict(type="path", default="/run/kunpeng-vllm/ascend-reboot-pending"),
            env_output=dict(type="str"),
            env_marker=dict(type="str", default=ap.ENV_MARKER),
            env_file=dict(type="str", default=""),
            verify_devices=dict(type="bool", default=False),
            pending_reboot=dict(type="bool", default=False),
            engine_version=dict(type="str", default=""),
        ),
        supports_check_mode=True,
    )
    try:
        result = decide(module.params)
    except ap.AscendPlanError as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
