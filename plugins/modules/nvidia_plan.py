#!/usr/bin/python
# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

DOCUMENTATION = r"""
---
module: nvidia_plan
short_description: Decide whether to adopt the NVIDIA driver or install one, which packages, and report the outcome
version_added: "0.1.0"
description:
  - The decision of the C(kunpeng.vllm.nvidia) role, made from the probe (C(kunpeng_accelerators)), the plan
    (C(kunpeng_vllm_plan)) and the role's variables. Reads nothing on the host and changes nothing.
  - "RV(plan.action): C(adopt) when a working driver (nvidia-smi lists at least one GPU) meets the minimum and
    O(replace) is false; C(too_old) when it is below the minimum and O(replace) is false; C(install) when no driver
    works or O(replace) is true."
  - The minimum is the planner's C(requirements.nvidia_driver_min) (what the chosen CUDA row needs) when O(vllm_plan)
    has one, else O(min_version). Versions are compared with the collection's one vendor-version comparator.
  - "Package names follow the driver branch: NVIDIA's CUDA repository for Ubuntu and Debian names the packages
    C(nvidia-open-<branch>) / C(cuda-drivers-<branch>) / C(nvidia-fabricmanager-<branch>) up to branch 580; from branch
    590 the branch suffix is gone (C(nvidia-open), C(cuda-drivers), C(nvidia-fabricmanager)) and the branch is held by
    the pinning package C(nvidia-driver-pinning-<branch>), installed first. rhel9 (openEuler) uses the dnf module stream
    C(nvidia-driver:<branch>-open) or C(<branch>-dkms); Ubuntu's own archive (O(source=distro)) uses
    C(nvidia-driver-<branch>-server[-open])."
  - RV(plan.refusals) lists every reason the request cannot go on (a source the platform lacks, a driver below the
    minimum, no GPU to install for, a runfile for the other architecture, without a name or a SHA-256), each with its fix.
    The role stops on them before any change.
  - With O(report_for) (the earlier RV(plan)) and O(outcome), returns the C(kunpeng_nvidia) fact and the report's
    sentences instead.
author:
  - kunpeng.vllm maintainers (@kunpeng-vllm)
options:
  accelerators:
    description:
      - The C(kunpeng_accelerators) fact from M(kunpeng.vllm.accelerator_facts) (keys C(nvidia), C(pci), C(summary) are read).
    type: dict
    required: true
  vllm_plan:
    description:
      - The C(kunpeng_vllm_plan) fact from M(kunpeng.vllm.vllm_plan); its C(requirements.nvidia_driver_min) is the minimum.
    type: dict
    default: {}
  distribution:
    description: C(ansible_facts['distribution']) (C(Ubuntu), C(Debian), C(openEuler)).
    type: str
    required: true
  distribution_version:
    description: C(ansible_facts['distribution_version']), for messages.
    type: str
    default: ""
  architecture:
    description: C(ansible_facts['architecture']) (C(x86_64) or C(aarch64)).
    type: str
    required: true
  sources:
    description: The driver sources this platform has (the role's platform variables).
    type: list
    elements: str
    required: true
  default_source:
    description: The source used when O(source) is empty.
    type: str
    required: true
  source:
    description: The requested source (C(nvidia_driver_source)); empty picks O(default_source).
    type: str
    default: ""
  branch:
    description: The driver branch to install (C(nvidia_driver_branch)), for example C(580) or C(590).
    type: str
    required: true
  kernel_module:
    description:
      - Open or proprietary kernel modules (C(nvidia_kernel_module)). C(auto) installs the open modules on Turing and newer
        and the proprietary ones when any GPU is older (Maxwell, Pascal, Volta), as NVIDIA's Driver Installation Guide says.
    type: str
    choices: [auto, open, proprietary]
    default: auto
  min_version:
    description: The operator's minimum (C(nvidia_driver_min_version)); the planner's minimum beats it.
    type: str
    default: ""
  replace:
    description: Install even over a working driver (C(nvidia_driver_replace)).
    type: bool
    default: false
  repo_base_url:
    description: Base URL of NVIDIA's CUDA repositories or a mirror (C(nvidia_cuda_repo_base_url)).
    type: str
    required: true
  repo_distro:
    description: The repository's distribution directory (C(ubuntu2404), C(debian12), C(rhel9)).
    type: str
    required: true
  repo_key:
    description: File name of the repository's signing key next to the repository.
    type: str
    default: ""
  repo_trusted:
    description:
      - A local test repository without a key (C(nvidia_cuda_repo_trusted)); the plan's C(repo.key_url) is then empty.
    type: bool
    default: false
  toolkit_version:
    description: The CUDA toolkit to install (C(nvidia_cuda_toolkit_version)); empty for none.
    type: str
    default: ""
  runfile_src:
    description: The runfile's path on the controller or its URL (C(nvidia_runfile_src)).
    type: str
    default: ""
  runfile_sha256:
    description: The runfile's SHA-256 (C(nvidia_runfile_sha256)).
    type: str
    default: ""
  service_mgr:
    description: The host's service manager (C(ansible_facts.service_mgr)); services are managed under C(systemd) only.
    type: str
    default: ""
  pkg_mgr:
    description:
      - The host's package manager (C(__nvidia_pkg_mgr) of the role's platform variables); picks the CUDA repository's
        package names. Empty - from O(distribution) (Debian and Ubuntu apt, openEuler dnf).
    type: str
    default: ""
    choices: ["", apt, dnf]
  persistenced:
    description: Whether the role runs nvidia-persistenced (C(nvidia_persistenced)).
    type: bool
    default: true
  toolkit_found:
    description: Whether the requested CUDA toolkit's C(nvcc) already exists (the toolkit is then adopted).
    type: bool
    default: false
  report_for:
    description: The RV(plan) this run made earlier; with it the module reports instead of planning.
    type: dict
  outcome:
    description:
      - What the role saw after acting, for the report (with O(report_for)). Keys C(owner_rc), C(owner_stdout) (the
        package owning nvidia-smi), C(install_changed), C(rebooted), C(service_mgr), C(kernel_module), C(toolkit_version),
        C(toolkit_dir), C(toolkit_missing), C(manage_env_file), C(env_file), C(cuda_home). O(accelerators) is then the
        probe after the install.
    type: dict
    default: {}
seealso:
  - name: NVIDIA Driver Installation Guide, Kernel Modules and Recent Updates (Ubuntu 590 and later packages)
    description: Package names per branch and the pinning packages.
    link: https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/
  - module: kunpeng.vllm.vllm_plan
extends_documentation_fragment:
  - kunpeng.vllm.attributes.read_only
  - kunpeng.vllm.attributes.facts
"""

EXAMPLES = r"""
- name: Decide what to do with the driver
  kunpeng.vllm.nvidia_plan:
    accelerators: "{{ kunpeng_accelerators }}"
    vllm_plan: "{{ kunpeng_vllm_plan | default({}) }}"
    distribution: "{{ ansible_facts['distribution'] }}"
    architecture: "{{ ansible_facts['architecture'] }}"
    sources: [cuda_repo, distro, runfile]
    default_source: cuda_repo
    branch: "590"
    repo_base_url: https://developer.download.nvidia.com/compute/cuda/repos
    repo_distro: ubuntu2404
    repo_key: 3bf863cc.pub
  register: nvidia_decision

- name: Stop when the request cannot go on
  ansible.builtin.assert:
    that: nvidia_decision.plan.refusals | length == 0
    fail_msg: "{{ nvidia_decision.plan.refusals | join(' ') }}"

- name: Report the outcome
  kunpeng.vllm.nvidia_plan:
    accelerators: "{{ kunpeng_accelerators }}"
    distribution: "{{ ansible_facts['distribution'] }}"
    architecture: "{{ ansible_facts['architecture'] }}"
    sources: [cuda_repo]
    default_source: cuda_repo
    branch: "590"
    repo_base_url: https://developer.download.nvidia.com/compute/cuda/repos
    repo_distro: ubuntu2404
    report_for: "{{ nvidia_decision.plan }}"
    outcome:
      install_changed: false
      service_mgr: "{{ ansible_facts['service_mgr'] }}"
"""

RETURN = r"""
plan:
  description: The decision (without O(report_for)).
  returned: when report_for is not given
  type: dict
  contains:
    action:
      description: C(adopt), C(too_old) or C(install).
      type: str
      sample: adopt
    found_version:
      description: The running driver's version; empty without one.
      type: str
      sample: 580.159.04
    found_kernel_module:
      description: C(open) or C(proprietary); empty without a driver.
      type: str
    kernel_module:
      description: The flavour a new driver gets, C(open) or C(proprietary) (C(auto) resolved by the GPU generation).
      type: str
      sample: open
    open_only_gpus:
      description: GPUs of a platform NVIDIA supports with the open kernel modules only (Grace Hopper, Blackwell), from
        nvidia-smi's compute capability, else the PCI device id; empty when none. C(proprietary) is refused for them.
      type: list
      elements: str
    pre_turing_gpus:
      description: GPUs older than Turing (from nvidia-smi's compute capability, else the PCI device id); empty when none.
      type: list
      elements: str
    working:
      description: Whether nvidia-smi answered and listed a GPU.
      type: bool
    tool:
      description: Path of nvidia-smi; empty when missing.
      type: str
    gpu_count:
      description: GPUs nvidia-smi listed.
      type: int
    pci_count:
      description: NVIDIA GPUs on the PCI bus.
      type: int
    pci_scanned:
      description: PCI functions the probe read.
      type: int
    min_version:
      description: The minimum driver; empty for none.
      type: str
      sample: "580"
    min_version_from:
      description: C(kunpeng_vllm_plan.requirements.nvidia_driver_min), C(nvidia_driver_min_version) or C(none).
      type: str
    meets_min:
      description: Whether the running driver meets the minimum.
      type: bool
    fabric_manager:
      description: Whether NVSwitches make Fabric Manager necessary.
      type: bool
    source:
      description: C(cuda_repo), C(distro) or C(runfile).
      type: str
    branch:
      description: The branch to install.
      type: str
    repo:
      description:
        - The CUDA repository, keys C(distro), C(arch) (C(sbsa) on aarch64), C(url), C(key_url) (empty for a trusted
          test repository), C(wanted).
      type: dict
      sample: {"distro": "ubuntu2404", "arch": "sbsa", "url": "https://mirror.example/ubuntu2404/sbsa/", "wanted": true}
    pinning_packages:
      description: Packages installed before the driver to hold its branch (C(nvidia-driver-pinning-<branch>) from 590).
      type: list
      elements: str
    driver_packages:
      description: The driver packages.
      type: list
      elements: str
      sample: ["nvidia-open"]
    package_state:
      description:
        - C(latest) with a pinning package (the unsuffixed names move to the newest version of the pinned branch, which is
          how a branch changes from 590 on), else C(present).
      type: str
      sample: present
    fabricmanager_packages:
      description: Fabric Manager packages on NVSwitch systems, else empty.
      type: list
      elements: str
    toolkit_packages:
      description: The CUDA toolkit package, when one is requested.
      type: list
      elements: str
    runfile:
      description: The runfile's C(name), C(arch), C(version), C(expected_arch) and C(remote) (a URL).
      type: dict
    steps:
      description:
        - Which of the role's steps run, one boolean each, so its tasks decide nothing. C(install_packages) and
          C(install_runfile) (the install path per source), C(pinning) (a branch-holding package goes first),
          C(look_for_runfile_driver) (packages would go over a working driver), C(checksum_runfile) (a runfile on the
          controller), C(toolkit_missing) (the requested toolkit has no nvcc, O(toolkit_found)), C(repository) (the
          CUDA repository is configured), C(manage_services) (install path under systemd, O(service_mgr)),
          C(note_no_systemd) (install path without it), C(persistenced_unit) (the runfile's persistence daemon gets a
          unit, O(persistenced)).
      type: dict
      sample: {"install_packages": true, "install_runfile": false, "pinning": true, "look_for_runfile_driver": false,
               "checksum_runfile": false, "toolkit_missing": false, "repository": true, "manage_services": true,
               "note_no_systemd": false, "persistenced_unit": false}
    refusals:
      description: Why the request cannot go on, each with its fix; empty when it can.
      type: list
      elements: str
report_lines:
  description: The report's sentences.
  returned: when report_for is given
  type: list
  elements: str
  sample: ["adopted driver 580.159.04 (open kernel module), not installed from a package"]
ansible_facts:
  description: The role's cross-role fact.
  returned: when report_for is given
  type: dict
  contains:
    kunpeng_nvidia:
      description:
        - C(driver_version), C(kernel_module), C(adopted), C(env_file), C(cuda_home), C(action), C(source)
          (C(adopted) for an adopted driver), C(gpu_count), C(services_managed), and C(reboot_pending) (a driver was
          installed or changed and the host has not been rebooted into it).
      returned: when report_for is given
      type: dict
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import nvidia_plan  # noqa: E402


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            accelerators=dict(type="dict", required=True),
            vllm_plan=dict(type="dict", default={}),
            distribution=dict(type="str", required=True),
            distribution_version=dict(type="str", default=""),
            architecture=dict(type="str", required=True),
            sources=dict(type="list", elements="str", required=True),
            default_source=dict(type="str", required=True),
            source=dict(type="str", default=""),
            branch=dict(type="str", required=True),
            kernel_module=dict(type="str", default="auto", choices=list(nvidia_plan.KERNEL_MODULES)),
            min_version=dict(type="str", default=""),
            replace=dict(type="bool", default=False),
            repo_base_url=dict(type="str", required=True),
            repo_distro=dict(type="str", required=True),
            repo_key=dict(type="str", default="", no_log=False),
            repo_trusted=dict(type="bool", default=False),
            toolkit_version=dict(type="str", default=""),
            runfile_src=dict(type="str", default=""),
            runfile_sha256=dict(type="str", default=""),
            service_mgr=dict(type="str", default=""),
            pkg_mgr=dict(type="str", default="", choices=["", "apt", "dnf"]),
            persistenced=dict(type="bool", default=True),
            toolkit_found=dict(type="bool", default=False),
            report_for=dict(type="dict"),
            outcome=dict(type="dict", default={}),
        ),
        supports_check_mode=True,
    )
    if module.params["report_for"]:
        outcome = dict(module.params["outcome"], accelerators=module.params["accelerators"])
        result = nvidia_plan.report(module.params["report_for"], outcome)
        module.exit_json(changed=False, report_lines=result["report_lines"],
                         ansible_facts={"kunpeng_nvidia": result["kunpeng_nvidia"]})
    module.exit_json(changed=False, plan=nvidia_plan.decide(module.params))


if __name__ == "__main__":
    main()
