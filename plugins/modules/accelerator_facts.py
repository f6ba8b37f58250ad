#!/usr/bin/python
# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

DOCUMENTATION = r"""
---
module: accelerator_facts
short_description: Probe a host for Ascend NPUs, NVIDIA GPUs and the CPU features vLLM cares about
version_added: "0.1.0"
description:
  - Reads the PCI bus from sysfs, so accelerators are found even before any vendor driver is installed.
  - Queries C(npu-smi) (key-value forms preferred, the main C(npu-smi info) table as fallback) and the Ascend
    version files for driver, firmware and CANN versions.
  - Queries C(nvidia-smi) (CSV query plus C(nvidia-smi -q -x)) and C(/proc/driver/nvidia/version)
    (driver version, open or proprietary kernel module); NVSwitch bridges on the PCI bus mean Fabric Manager is required.
  - Reads C(/proc/cpuinfo), C(/proc/meminfo) and the NUMA nodes for CPU architecture, Kunpeng model and SIMD features.
  - Sets a single fact C(kunpeng_accelerators) with the keys C(pci), C(ascend), C(nvidia), C(cpu) and C(summary).
    C(summary.backend) is C(ascend), C(cuda) or C(cpu) and C(summary.problems) lists what needs attention.
  - A missing tool is a finding, not a failure. A tool that fails, hangs or prints something unparsable
    produces a warning naming the command and an entry in C(summary.problems); the module itself does not fail.
  - Every path and the tool search path are options, so captured output can be replayed on any machine.
author:
  - kunpeng.vllm maintainers (@kunpeng-vllm)
options:
  sysfs_root:
    description:
      - Root of the sysfs tree. PCI devices are read from C(<sysfs_root>/bus/pci/devices) and NUMA nodes
        from C(<sysfs_root>/devices/system/node).
    type: path
    default: /sys
  procfs_root:
    description:
      - Root of the procfs tree; C(cpuinfo), C(meminfo) and C(driver/nvidia/version) are read below it.
    type: path
    default: /proc
  ascend_root:
    description:
      - Ascend install prefix holding C(driver/version.info), C(firmware/version.info) and
        C(ascend-toolkit/latest/<arch>-linux/ascend_toolkit_install.info).
    type: path
    default: /usr/local/Ascend
  ascend_install_info:
    description:
      - The install record the Ascend driver package writes (KEY=VALUE).
    type: path
    default: /etc/ascend_install.info
  tool_path:
    description:
      - Directories searched first for C(npu-smi) and C(nvidia-smi).
      - Afterwards C(PATH), C(/usr/local/bin) and C(/usr/local/sbin) are searched unless O(tool_path_only=true).
    type: list
    elements: path
    default: []
  tool_path_only:
    description:
      - Look for C(npu-smi) and C(nvidia-smi) only in O(tool_path). Use this to replay captured output
        with stand-in tools on a machine that may have the real ones installed.
    type: bool
    default: false
  command_timeout:
    description:
      - Seconds each C(npu-smi) / C(nvidia-smi) call may take. Enforced through coreutils C(timeout) when it
        is installed (without it commands run unbounded). A call that times out is reported as a problem
        and the remaining calls to that tool are skipped.
    type: int
    default: 10
  architecture:
    description:
      - CPU architecture as C(uname -m) prints it (C(aarch64), C(x86_64)). Defaults to the architecture of the
        Python running the module. Selects the CANN toolkit directory and which CPU features are checked.
    type: str
extends_documentation_fragment:
  - kunpeng.vllm.attributes.read_only
  - kunpeng.vllm.attributes.facts
attributes:
  platform:
    description: Target OS/families that can be operated against.
    support: full
    platforms: posix
notes:
  - Supports check mode; the module never changes anything.
  - C(npu-smi) usually needs root or membership of the driver's run user group (C(HwHiAiUser)); use C(become) where it does.
  - Ascend C(MB) values are reported by C(npu-smi) in units of 1024*1024 bytes and are returned as MiB unchanged.
seealso:
  - name: npu-smi command reference
    description: Huawei's reference for the Ascend device management tool.
    link: https://support.huawei.com/enterprise/en/doc/EDOC1100079295
  - name: nvidia-smi documentation
    description: NVIDIA's System Management Interface.
    link: https://docs.nvidia.com/deploy/nvidia-smi/index.html
"""

EXAMPLES = r"""
- name: Probe accelerators
  kunpeng.vllm.accelerator_facts:

- name: Show the decision
  ansible.builtin.debug:
    msg: "{{ kunpeng_accelerators.summary.backend }} x {{ kunpeng_accelerators.summary.device_count }}"

- name: Fail early when the accelerator stack is not healthy
  ansible.builtin.assert:
    that: kunpeng_accelerators.summary.problems | length == 0
    fail_msg: "{{ kunpeng_accelerators.summary.problems }}"

- name: Replay captured npu-smi output from a directory of stand-in tools
  kunpeng.vllm.accelerator_facts:
    tool_path:
      - /srv/captures/atlas-800i-a2/bin
    tool_path_only: true
    sysfs_root: /srv/captures/atlas-800i-a2/sys
    procfs_root: /srv/captures/atlas-800i-a2/proc
    architecture: aarch64
    command_timeout: 5
"""

RETURN = r"""
ansible_facts:
  description: Facts added to the host.
  returned: always
  type: dict
  contains:
    kunpeng_accelerators:
      description: Everything the probe found, in five sections.
      returned: always
      type: dict
      contains:
        pci:
          description: Accelerators seen on the PCI bus in sysfs, independent of any driver.
          returned: always
          type: dict
          contains:
            ascend:
              description:
                - Huawei (vendor 0x19e5) functions with a known Ascend device id, one entry per function with
                  C(bus_id), C(vendor_id), C(device_id), C(subsystem_vendor_id), C(subsystem_device_id), C(class),
                  C(numa_node) (null when sysfs says -1), C(chip) and C(product).
              type: list
              elements: dict
              sample: [{"bus_id": "0000:c1:00.0", "vendor_id": "0x19e5", "device_id": "0xd802", "subsystem_vendor_id": "0x19e5",
                        "subsystem_device_id": "0x3005", "class": "0x120000", "numa_node": 2, "chip": "Ascend 910B", "product": "Atlas A2"}]
            ascend_count:
              description: Number of entries in RV(ansible_facts.kunpeng_accelerators.pci.ascend).
              type: int
              sample: 8
            ascend_chips:
              description: Distinct chip names among the Ascend functions.
              type: list
              elements: str
              sample: ["Ascend 910B"]
            nvidia:
              description:
                - NVIDIA (vendor 0x10de) display / 3D controllers (class 0x0300xx, 0x0302xx).
                - One entry per function with C(bus_id), C(vendor_id), C(device_id), C(subsystem_vendor_id), C(subsystem_device_id),
                  C(class) and C(numa_node), as for the Ascend entries.
              type: list
              elements: dict
              sample: [{"bus_id": "0000:18:00.0", "vendor_id": "0x10de", "device_id": "0x2330", "subsystem_vendor_id": "0x10de",
                        "subsystem_device_id": "0x16c1", "class": "0x030200", "numa_node": 0}]
            nvidia_count:
              description: Number of NVIDIA GPUs on the PCI bus.
              type: int
              sample: 8
            nvswitch:
              description:
                - NVIDIA bridge functions (class 0x0680xx), i.e. NVSwitch chips.
                - Same keys as the GPU entries, C(bus_id), C(vendor_id), C(device_id), C(subsystem_vendor_id), C(subsystem_device_id),
                  C(class) and C(numa_node).
              type: list
              elements: dict
              sample: []
            nvswitch_count:
              description: Number of NVSwitch functions; non-zero means an HGX-style NVSwitch system.
              type: int
              sample: 4
            scanned:
              description: Number of PCI functions read from sysfs (0 when sysfs is not available).
              type: int
              sample: 112
        ascend:
          description: What the Ascend driver stack reports.
          returned: always
          type: dict
          contains:
            tool:
              description: Path of C(npu-smi), null when it was not found.
              type: str
              sample: /usr/local/bin/npu-smi
            source:
              description: C(key-value) when the C(npu-smi info -l/-m/-t) forms worked, C(table) when only the main table did, null otherwise.
              type: str
              sample: key-value
            npu_smi_version:
              description: Version printed in the header of the C(npu-smi info) table.
              type: str
              sample: 25.0.rc1.1
            table_layout:
              description: C(chip) (Atlas A2), C(chip_phy_id) (Atlas A3) or C(chip_device) (310P); null without a table.
              type: str
              sample: chip
            driver_version:
              description: C(Version) from C(<ascend_root>/driver/version.info), else the board's software version.
              type: str
              sample: 24.1.rc1
            firmware_version:
              description: C(Version) from C(<ascend_root>/firmware/version.info), else the board's firmware version.
              type: str
              sample: 7.1.0.11.220
            cann_version:
              description: C(version) from the CANN toolkit's C(ascend_toolkit_install.info); null when CANN is not installed.
              type: str
              sample: 8.1.RC1
            versions:
              description:
                - Raw KEY=VALUE contents of the version files, keys C(driver), C(firmware), C(install_info) and C(toolkit)
                  (each an empty dict when the file is missing), plus C(toolkit_info_path).
              type: dict
              sample: {"driver": {"Version": "24.1.rc1"}, "firmware": {"Version": "7.1.0.11.220"}, "install_info": {"UserName": "HwHiAiUser"},
                       "toolkit": {"version": "8.1.RC1"},
                       "toolkit_info_path": "/usr/local/Ascend/ascend-toolkit/latest/aarch64-linux/ascend_toolkit_install.info"}
            npu_count:
              description: Number of NPUs (cards / modules) npu-smi lists.
              type: int
              sample: 8
            chip_count:
              description: Number of compute chips (MCU pseudo-chips excluded); A3 has two per NPU.
              type: int
              sample: 8
            devices:
              description:
                - One entry per compute chip with C(npu_id), C(chip_id), C(logic_id), C(phy_id) (A3), C(device_id) (310P),
                  C(name), C(health), C(error_code), C(bus_id), C(power_w), C(temp_c), C(aicore_percent),
                  C(hbm_total_mib), C(hbm_used_mib), C(memory_total_mib), C(memory_used_mib) and C(device_memory_mib)
                  (HBM where present, else on-card DDR). Unreported values are null.
              type: list
              elements: dict
              sample: [{"npu_id": 0, "chip_id": 0, "logic_id": 0, "phy_id": null, "device_id": null, "name": "Ascend 910B4", "health": "OK",
                        "error_code": null, "bus_id": "0000:c1:00.0", "power_w": 87.2, "temp_c": 33, "aicore_percent": 0,
                        "hbm_total_mib": 32768, "hbm_used_mib": 2654, "memory_total_mib": 0, "memory_used_mib": 0, "device_memory_mib": 32768}]
            boards:
              description: Per NPU, the parsed C(npu-smi info -t board -i N) (C(npu_id), C(product_name), C(software_version), C(firmware_version),
                C(compatibility), C(bus_id), C(vendor_id), C(device_id), C(chip_count)).
              type: list
              elements: dict
              sample: [{"npu_id": 0, "software_version": "24.1.rc1", "firmware_version": "7.1.0.11.220", "compatibility": "OK",
                        "bus_id": "0000:c1:00.0", "vendor_id": "0x19e5", "device_id": "0xd802", "chip_count": 1, "product_name": null}]
            processes:
              description: Processes from the table's process section (C(npu_id), C(chip_id), C(pid), C(name), C(memory_mib)).
              type: list
              elements: dict
              sample: [{"npu_id": 0, "chip_id": 0, "pid": 812345, "name": "python3", "memory_mib": 29800}]
            findings:
              description: Commands that failed, timed out or printed unparsable output (also in RV(ansible_facts.kunpeng_accelerators.summary.problems)).
              type: list
              elements: str
              sample: []
        nvidia:
          description: What the NVIDIA driver stack reports.
          returned: always
          type: dict
          contains:
            tool:
              description: Path of C(nvidia-smi), null when it was not found.
              type: str
              sample: /usr/bin/nvidia-smi
            driver_version:
              description: Driver version from nvidia-smi, else from C(/proc/driver/nvidia/version).
              type: str
              sample: 580.82.07
            cuda_version:
              description: Highest CUDA version the driver supports (from C(nvidia-smi -q -x)).
              type: str
              sample: "13.0"
            kernel_module:
              description: C(open) or C(proprietary) from C(/proc/driver/nvidia/version); null when no module is loaded.
              type: str
              sample: open
            kernel_module_loaded:
              description: Whether C(/proc/driver/nvidia/version) exists.
              type: bool
              sample: true
            kernel_module_banner:
              description: The C(NVRM version) line of C(/proc/driver/nvidia/version).
              type: str
              sample: "NVIDIA UNIX Open Kernel Module for x86_64  580.82.07  Release Build  (dvs-builder@U22-I3-AF03-09-1)  Wed Aug 27 20:07:31 UTC 2025"
            gpus:
              description:
                - One entry per GPU with C(index), C(uuid), C(name), C(bus_id), C(memory_total_mib), C(memory_used_mib), C(device_memory_mib),
                  C(driver_version), C(compute_cap), C(persistence_mode), C(mig_mode) from the CSV query and C(architecture),
                  C(addressing_mode), C(fabric) (C(state), C(status), C(clique_id), C(cluster_uuid); empty when not reported) and
                  C(nvlink) (flattened leaf values of any nvlink element) from the XML.
              type: list
              elements: dict
              sample: [{"index": 0, "uuid": "GPU-5f1c2c36-0d6e-4b7e-9f3e-1b2a3c4d5e60", "name": "NVIDIA H100 80GB HBM3", "bus_id": "0000:18:00.0",
                        "memory_total_mib": 81559, "memory_used_mib": 0, "device_memory_mib": 81559, "driver_version": "580.82.07",
                        "compute_cap": "9.0", "persistence_mode": "Enabled", "mig_mode": "Disabled", "architecture": "Hopper",
                        "addressing_mode": "None", "fabric": {"state": "Completed", "status": "Success", "clique_id": "32766",
                        "cluster_uuid": "00000000-0000-0000-0000-000000000000"}, "nvlink": {}}]
            nvswitch_count:
              description: NVSwitch functions on the PCI bus (copied from the PCI section).
              type: int
              sample: 4
            fabric_manager_required:
              description: True on NVSwitch systems, where CUDA needs nvidia-fabricmanager running.
              type: bool
              sample: true
            findings:
              description: Commands that failed, timed out or printed unparsable output.
              type: list
              elements: str
              sample: []
        cpu:
          description: CPU and memory of the host.
          returned: always
          type: dict
          contains:
            architecture:
              description: Normalised C(uname -m) (C(aarch64), C(x86_64)).
              type: str
              sample: aarch64
            vendor:
              description: C(vendor_id) on x86, the implementer's name on arm64.
              type: str
              sample: HiSilicon
            model_name:
              description: C(model name) on x86; on arm64 the known model (C(Kunpeng 920)) or C(<vendor> part <id>).
              type: str
              sample: Kunpeng 920
            cpu_implementer:
              description: arm64 C(CPU implementer) (C(0x48) is HiSilicon); null on x86.
              type: str
              sample: "0x48"
            cpu_part:
              description: arm64 C(CPU part) (C(0xd01) is Kunpeng 920); null on x86.
              type: str
              sample: "0xd01"
            kunpeng:
              description: True when the CPU implementer is HiSilicon (0x48).
              type: bool
              sample: true
            kunpeng_model:
              description: C(Kunpeng 920) for part 0xd01, C(HiSilicon part <id>) for other HiSilicon parts, null otherwise.
              type: str
              sample: Kunpeng 920
            logical_cpus:
              description: Number of C(processor) entries in C(/proc/cpuinfo).
              type: int
              sample: 192
            features:
              description:
                - C(avx2), C(avx512) (avx512f), C(amx) (amx_tile) on x86; C(neon) (asimd), C(sve) on arm64.
                - C(bf16) is native bfloat16 arithmetic (avx512_bf16 or amx_bf16 on x86, bf16 on arm64); the CPU plan's
                  served dtype reads it.
                - Always all six keys.
              type: dict
              sample: {"avx2": false, "avx512": false, "amx": false, "neon": true, "sve": false, "bf16": false}
            numa_nodes:
              description: Number of NUMA nodes in sysfs; null when C(<sysfs_root>/devices/system/node) is missing.
              type: int
              sample: 4
            numa_node_ids:
              description: The NUMA node ids.
              type: list
              elements: int
              sample: [0, 1, 2, 3]
            numa_cpus:
              description: The CPU list of each NUMA node (C(node<id>/cpulist) in sysfs), in the order of C(numa_node_ids).
              type: list
              elements: str
              sample: ["0-47", "48-95", "96-143", "144-191"]
            memory_mib:
              description: C(MemTotal) of C(/proc/meminfo) in MiB.
              type: int
              sample: 1546228
        summary:
          description: The decision other roles and modules read.
          returned: always
          type: dict
          contains:
            backend:
              description:
                - C(ascend) when Ascend chips are on the PCI bus or reported by npu-smi, else C(cuda) when NVIDIA GPUs are, else C(cpu).
                - It follows the hardware; C(driver_ready) says whether the driver can use it.
              type: str
              sample: ascend
            backend_reason:
              description: One sentence explaining the backend.
              type: str
              sample: npu-smi reports 8 Ascend chip(s) (Ascend 910B4)
            driver_ready:
              description: True when the vendor tool reports at least one device of the chosen backend.
              type: bool
              sample: true
            device_name:
              description: Most common device name (C(Ascend 910B4), C(NVIDIA H100 80GB HBM3)); null for C(cpu) or without a driver.
              type: str
              sample: Ascend 910B4
            device_count:
              description: Devices reported by the driver tool, or the PCI count when the driver reports none; 0 for C(cpu).
              type: int
              sample: 8
            device_memory_mib:
              description: Memory per device in MiB, in device order (empty when the driver reports none).
              type: list
              elements: int
              sample: [32768, 32768, 32768, 32768, 32768, 32768, 32768, 32768]
            min_device_memory_mib:
              description: Smallest per-device memory in MiB, null when unknown.
              type: int
              sample: 32768
            total_memory_mib:
              description: Sum of RV(ansible_facts.kunpeng_accelerators.summary.device_memory_mib).
              type: int
              sample: 262144
            host_memory_mib:
              description: Host RAM in MiB (from the CPU section).
              type: int
              sample: 1546228
            problems:
              description:
                - Human-readable problems, for example a PCI/driver count mismatch, a device whose health is not OK,
                  accelerators on the PCI bus without their driver tool, failed or hung commands, NVSwitch fabric not ready.
              type: list
              elements: str
              sample: ["PCI shows 8 Ascend 910B device(s) but npu-smi reports only 6"]
"""

import os  # noqa: E402
import platform  # noqa: E402
from typing import Any, Callable, Dict, List, Optional  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.kunpeng.vllm.plugins.module_utils.probe.accelerator_summary import summarize  # noqa: E402
from ansible_collections.kunpeng.vllm.plugins.module_utils.probe.cpu import normalize_architecture, numa_node_ids, parse_cpuinfo, parse_meminfo  # noqa: E402
from ansible_collections.kunpeng.vllm.plugins.module_utils.probe.kv_files import read_text  # noqa: E402
from ansible_collections.kunpeng.vllm.plugins.module_utils.backends import registry as backends  # noqa: E402
from ansible_collections.kunpeng.vllm.plugins.module_utils.probe.pci import device_rules, probe_pci  # noqa: E402

C_LOCALE = {"LC_ALL": "C", "LANG": "C"}
TIMEOUT_RCS = (124, 137)
EXTRA_TOOL_DIRS = ["/usr/local/bin", "/usr/local/sbin"]


class Runner:
    """Runs vendor tools with a timeout and turns every failure into a finding."""

    def __init__(self, module: AnsibleModule) -> None:
        self.module = module
        self.timeout = module.params["command_timeout"]
        self.timeout_bin = module.get_bin_path("timeout")
        self.hung: set = set()

    def find_tool(self, name: str) -> Optional[str]:
        for directory in self.module.params["tool_path"]:
            candidate = os.path.join(directory, name)
            if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                return candidate
        if self.module.params["tool_path_only"]:
            return None
        return self.module.get_bin_path(name, opt_dirs=EXTRA_TOOL_DIRS)

    def warn(self, message: str) -> None:
        self.module.warn(message)

    def _problem(self, findings: List[str], message: str) -> None:
        findings.append(message)
        self.warn(message)

    def query(self, tool: str, args: List[str], parser: Callable[[str], Any], findings: List[str]) -> Any:
        """Run ``tool args`` and return ``parser(stdout)``, or ``None`` after recording why not."""
        label = "`{} {}`".format(os.path.basename(tool), " ".join(args))
        if tool in self.hung:
            return None
        argv = [tool] + list(args)
        if self.timeout_bin and self.timeout > 0:
            argv = [self.timeout_bin, "-k", "2", str(self.timeout)] + argv
        rc, out, err = self.module.run_command(argv, environ_update=C_LOCALE)
        if self.timeout_bin and rc in TIMEOUT_RCS:
            self.hung.add(tool)
            self._problem(findings, f"{label} timed out after {self.timeout} s; further {os.path.basename(tool)} queries skipped")
            return None
        if rc != 0:
            detail = (err or out or "").strip().splitlines()
            self._problem(findings, "{} failed with rc={}{}".format(label, rc, ": " + detail[0][:200] if detail else ""))
            return None
        try:
            return parser(out)
        except ValueError as exc:
            self._problem(findings, f"{label} printed output that could not be parsed: {exc}")
            return None


def probe_cpu(params: Dict[str, Any], arch: Optional[str]) -> Dict[str, Any]:
    cpu = parse_cpuinfo(read_text(os.path.join(params["procfs_root"], "cpuinfo")), arch)
    cpu["memory_mib"] = parse_meminfo(read_text(os.path.join(params["procfs_root"], "meminfo")))
    try:
        node_dir = os.path.join(params["sysfs_root"], "devices", "system", "node")
        ids = numa_node_ids(os.listdir(node_dir))
        cpu["numa_nodes"], cpu["numa_node_ids"] = len(ids), ids
        cpu["numa_cpus"] = [(read_text(os.path.join(node_dir, f"node{i}", "cpulist")) or "").strip() for i in ids]
    except OSError:
        cpu["numa_nodes"], cpu["numa_node_ids"], cpu["numa_cpus"] = None, [], []
    return cpu


def probe_sections(runner: Any, params: Dict[str, Any], arch: Optional[str], pci: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    """Every device backend's probe section by its name (record ``hardware.section``): its class runs its tool
    through ``runner`` (``probe``), so a new backend adds its section without an edit here."""
    sections: Dict[str, Dict[str, Any]] = {}
    for instance in backends.INSTANCES.values():
        if instance.record.get("hardware"):
            sections[instance.record["hardware"]["section"]] = instance.probe(runner, params, arch, pci)
    return sections


def other_backends(sections: Dict[str, Dict[str, Any]]) -> List[Dict[str, Any]]:
    """The device backends beyond Ascend and NVIDIA, with their rank, record and probe section, for ``summarize``."""
    others = []
    for name in backends.NAMES:
        hardware = backends.field(name, "hardware")
        if hardware and hardware["section"] not in ("ascend", "nvidia"):
            others.append({"name": name, "rank": backends.backend(name).rank, "hardware": hardware,
                           "section": sections.get(hardware["section"]) or {}})
    return others


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            sysfs_root=dict(type="path", default="/sys"),
            procfs_root=dict(type="path", default="/proc"),
            ascend_root=dict(type="path", default="/usr/local/Ascend"),
            ascend_install_info=dict(type="path", default="/etc/ascend_install.info"),
            tool_path=dict(type="list", elements="path", default=[]),
            tool_path_only=dict(type="bool", default=False),
            command_timeout=dict(type="int", default=10),
            architecture=dict(type="str"),
        ),
        supports_check_mode=True,
    )
    if module.params["command_timeout"] < 1:
        module.fail_json(msg="command_timeout must be at least 1 second, got {}".format(module.params["command_timeout"]))
    arch = normalize_architecture(module.params["architecture"] or platform.machine())
    runner = Runner(module)
    pci = probe_pci(module.params["sysfs_root"], device_rules(backends.BACKENDS))
    sections = probe_sections(runner, module.params, arch, pci)
    cpu = probe_cpu(module.params, arch)
    facts = {"pci": pci, **sections, "cpu": cpu,
             "summary": summarize(pci, sections.get("ascend") or {}, sections.get("nvidia") or {}, cpu, other_backends(sections))}
    module.exit_json(changed=False, ansible_facts={"kunpeng_accelerators": facts})


if __name__ == "__main__":
    main()
