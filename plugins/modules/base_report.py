#!/usr/bin/python
# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

DOCUMENTATION = r"""
---
module: base_report
short_description: Decide what kunpeng.vllm.base applies on this host, and say why
version_added: "0.1.0"
description:
  - The decisions of the C(kunpeng.vllm.base) role, from what its tasks probed, with the sentence that reports each one.
  - With O(driver_build), whether DKMS and the kernel headers can be installed (the distribution has headers for the
    running kernel; a container runs the host's kernel and a custom kernel has none).
  - With O(firewall), whether the platform firewall is installed and active, and then the rules to add (each port
    from each listed source only, with the firewalld rich rule and the ufw port spelling) and the ports whose
    allow-from-anywhere rule is removed. No source, no rule - a port is never opened to everyone unless a source says so.
  - With O(tuning), which enabled tunables can be applied (the kernel exposes them and lets them be written, systemd-tmpfiles
    can persist sysfs settings, cpufreq offers the wanted governor) and which are skipped with the reason.
  - With O(toolchain), which compiler packages the host needs - the C/C++ compiler and Python headers (kernels torch
    compiles at run time in compiled mode, a source build) and the build tools (make, cmake, git, libnuma headers; for
    a source build or the Ascend CANN installer) - from the vLLM plan, the install method and C(base_build_toolchain).
  - Only computes; never changes the host, so check mode gives the same result.
author:
  - kunpeng.vllm maintainers (@kunpeng-vllm)
options:
  driver_build:
    description: The driver build prerequisites question.
    type: dict
    suboptions:
      wanted:
        description: The role's C(base_driver_build).
        type: bool
        required: true
      headers_package:
        description: The kernel headers package for the running kernel.
        type: str
        required: true
      headers_found:
        description: Whether the package manager knows O(driver_build.headers_package) (null when not looked up).
        type: bool
      kernel:
        description: The running kernel (C(uname -r)).
        type: str
        required: true
  toolchain:
    description: The build toolchain question.
    type: dict
    suboptions:
      request:
        description: The role's C(base_build_toolchain).
        type: str
        default: auto
        choices: [auto, always, never]
      plan:
        description: C(kunpeng_vllm_plan) (C(backend), C(engine_args)); empty when no plan ran (the full toolchain).
        type: dict
        default: {}
      install_method:
        description: C(vllm_install_method).
        type: str
        default: wheel
        choices: [wheel, source, container]
  firewall:
    description: The firewall question.
    type: dict
    suboptions:
      manage:
        description: The role's C(base_firewall_manage).
        type: bool
        required: true
      name:
        description: The platform firewall, C(ufw) or C(firewalld).
        type: str
        required: true
      probe_rc:
        description: Exit status of C(ufw status verbose) or C(firewall-cmd --list-all) (null when not run).
        type: int
      probe_stdout:
        description: What that command printed.
        type: str
        default: ""
      ports:
        description: The TCP ports to open to O(firewall.sources) (C(base_firewall_ports)).
        type: list
        elements: int
        default: []
      sources:
        description: Addresses or CIDR networks allowed to reach O(firewall.ports) (C(base_firewall_sources)).
        type: list
        elements: str
        default: []
      rules:
        description:
          - More ports with their own sources (C(base_firewall_rules)), each with C(ports) (ports or ranges
            C(first-last)), C(sources) and C(protocol) (C(tcp) or C(udp), default C(tcp)).
        type: list
        elements: dict
        default: []
      interface:
        description:
          - The NIC that carries a multi-node instance's traffic (C(kunpeng_vllm_cluster.interface)); empty for none.
            With firewalld, C(default_deny) reads every zone that takes connections from other machines, this NIC's
            among them (the default zone, every zone that holds an interface, Docker's own bridges in its C(docker)
            zone aside; a NIC in C(trusted) admits everyone).
        type: str
        default: ""
      zones_stdout:
        description:
          - What C(firewall-cmd --list-all-zones) printed (firewalld). A zone bound to a wide source (C(trusted)
            bound to C(0.0.0.0/0)) takes connections before the NIC's zone, so it counts too. A zone's services count
            as open unless each is one whose ports are a few known single ports (C(ssh), C(https), C(cockpit), ...).
        type: str
        default: ""
  tuning:
    description: The tuning question.
    type: dict
    suboptions:
      tunables:
        description: The enabled tunables, each with C(name), C(kind) (C(sysctl) or C(sysfs)), C(value), C(probe) and, for sysfs, C(write).
        type: list
        elements: dict
        required: true
      exists:
        description: Per tunable, whether its C(probe) file exists.
        type: list
        elements: bool
        required: true
      writeable:
        description: Per tunable, whether its C(probe) file is writeable.
        type: list
        elements: bool
        required: true
      governors:
        description: Content of cpufreq's C(scaling_available_governors) (empty when not read).
        type: str
        default: ""
      governors_path:
        description: cpufreq's C(scaling_available_governors), read on the host when O(tuning.governors) is empty and it exists.
        type: path
      limits:
        description: The service account's resource limits (C(base_tune_limits)); reported as applied when C(wanted).
        type: dict
        suboptions:
          wanted:
            description: Whether the limits file is written.
            type: bool
            default: false
          nofile:
            description: The open-files limit.
            type: raw
          memlock:
            description: The locked-memory limit.
            type: raw
          file:
            description: The limits file.
            type: str
            default: ""
      clock:
        description: Time synchronisation (C(base_time_sync)); decides C(tuning.time_sync).
        type: dict
        suboptions:
          wanted:
            description: Whether chrony is asked for.
            type: bool
            default: false
          in_container:
            description: Whether the host is a container (the clock belongs to the container host).
            type: bool
            default: false
          service:
            description: chrony's unit name, for the report.
            type: str
            default: ""
      service_mgr:
        description: The host's service manager.
        type: str
        required: true
      sysctl_file:
        description: Where the sysctl settings are written.
        type: str
        required: true
      tmpfiles_file:
        description: Where the sysfs settings are written for systemd-tmpfiles.
        type: str
        required: true
extends_documentation_fragment:
  - kunpeng.vllm.attributes.read_only
"""

EXAMPLES = r"""
- name: Decide which compiler packages this host needs
  kunpeng.vllm.base_report:
    toolchain:
      request: auto
      plan: "{{ kunpeng_vllm_plan | default({}) }}"
      install_method: "{{ vllm_install_method | default('wheel') }}"
  register: toolchain

- name: Decide whether the driver build prerequisites can be installed
  kunpeng.vllm.base_report:
    driver_build:
      wanted: true
      headers_package: "linux-headers-{{ ansible_facts['kernel'] }}"
      headers_found: "{{ headers_lookup.rc == 0 }}"
      kernel: "{{ ansible_facts['kernel'] }}"
  register: driver_build

- name: Say why they were skipped
  ansible.builtin.debug:
    msg: "{{ driver_build.driver_build.reason }}"
  when: driver_build.driver_build.status == 'skipped'
"""

RETURN = r"""
toolchain:
  description: With O(toolchain). C(compiler) and C(build) (booleans) and C(reason).
  returned: when O(toolchain) is given
  type: dict
  sample: {"compiler": false, "build": false,
           "reason": "released wheels in eager mode: no compiler needed (vllm_install_method wheel, enforce_eager)"}
driver_build:
  description: With O(driver_build). C(wanted), C(headers_package), C(status) (C(off), C(installed), C(skipped)) and C(reason).
  returned: when O(driver_build) is given
  type: dict
  sample: {"wanted": true, "headers_package": "linux-headers-6.1.0-28-amd64", "status": "installed",
           "reason": "dkms and linux-headers-6.1.0-28-amd64"}
firewall:
  description:
    - With O(firewall). C(firewall), C(active), C(default_deny) (active, and inbound connections no rule admits are
      refused - ufw's default C(deny (incoming)), firewalld's default zone not C(trusted) with target C(default),
      C(DROP) or C(REJECT) - and no rule admits anyone past a few single ports, such as C(allow from any), a TCP port
      range from anywhere, a rule to every port from a network wider than a LAN, firewalld's C(trusted) zone bound
      to a wide source or a rich C(accept) without a narrow source), C(ports) (first port of each opened rule; empty
      when not active),
      C(rules) (to allow, each C(port), C(proto), C(source), C(family), C(ufw_port), C(rich_rule)),
      C(close) (each managed C(port), C(proto), C(ufw_port) whose allow-from-anywhere rule is removed) and C(note).
    - C(rules) and C(close) are empty when the firewall is not active.
  returned: when O(firewall) is given
  type: dict
  sample: {"firewall": "ufw", "active": true, "default_deny": true, "ports": [8000],
           "rules": [{"port": "8000", "proto": "tcp", "source": "10.0.0.0/8", "family": "ipv4", "ufw_port": "8000",
                      "rich_rule": "rule family=\"ipv4\" source address=\"10.0.0.0/8\" port port=\"8000\" protocol=\"tcp\" accept"}],
           "close": [{"port": "8000", "proto": "tcp", "ufw_port": "8000"}],
           "note": "in ufw, allowed 8000/tcp from 10.0.0.0/8"}
tuning:
  description:
    - With O(tuning). C(items) (per tunable C(setting), C(wanted), C(status) C(applied) or C(skipped), C(reason)),
      C(sysctl_apply) (name to value) and C(sysfs_apply) (C(path), C(value)); C(write_sysctl) and C(write_sysfs)
      (whether there is anything to write), C(time_sync) (whether chrony is installed and started - asked for, not a
      container, systemd). The resource limits and time synchronisation, when asked for, are items too.
  returned: when O(tuning) is given
  type: dict
  sample: {"items": [{"setting": "vm.swappiness", "wanted": "10", "status": "skipped",
                      "reason": "/proc/sys/vm/swappiness is read-only (container or locked-down kernel)"}],
           "sysctl_apply": {}, "sysfs_apply": [], "write_sysctl": false, "write_sysfs": false, "time_sync": false}
"""

import os  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.kunpeng.vllm.plugins.module_utils.execute import base_report  # noqa: E402


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            driver_build=dict(type="dict", options=dict(
                wanted=dict(type="bool", required=True),
                headers_package=dict(type="str", required=True),
                headers_found=dict(type="bool"),
                kernel=dict(type="str", required=True),
            )),
            toolchain=dict(type="dict", options=dict(
                request=dict(type="str", default="auto", choices=["auto", "always", "never"]),
                plan=dict(type="dict", default={}),
                install_method=dict(type="str", default="wheel", choices=["wheel", "source", "container"]),
            )),
            firewall=dict(type="dict", options=dict(
                manage=dict(type="bool", required=True),
                name=dict(type="str", required=True),
                probe_rc=dict(type="int"),
                probe_stdout=dict(type="str", default=""),
                ports=dict(type="list", elements="int", default=[]),
                sources=dict(type="list", elements="str", default=[]),
                rules=dict(type="list", elements="dict", default=[]),
                interface=dict(type="str", default=""),
                zones_stdout=dict(type="str", default=""),
            )),
            tuning=dict(type="dict", options=dict(
                tunables=dict(type="list", elements="dict", required=True),
                exists=dict(type="list", elements="bool", required=True),
                writeable=dict(type="list", elements="bool", required=True),
                governors=dict(type="str", default=""),
                governors_path=dict(type="path"),
                limits=dict(type="dict", options=dict(
                    wanted=dict(type="bool", default=False),
                    nofile=dict(type="raw"),
                    memlock=dict(type="raw"),
                    file=dict(type="str", default=""),
                )),
                clock=dict(type="dict", options=dict(
                    wanted=dict(type="bool", default=False),
                    in_container=dict(type="bool", default=False),
                    service=dict(type="str", default=""),
                )),
                service_mgr=dict(type="str", required=True),
                sysctl_file=dict(type="str", required=True),
                tmpfiles_file=dict(type="str", required=True),
            )),
        ),
        supports_check_mode=True,
    )
    result = {}
    if module.params["driver_build"]:
        result["driver_build"] = base_report.driver_build(**module.params["driver_build"])
    if module.params["toolchain"]:
        result["toolchain"] = base_report.toolchain(**module.params["toolchain"])
    if module.params["firewall"]:
        try:
            result["firewall"] = base_report.firewall(**module.params["firewall"])
        except ValueError as exc:
            module.fail_json(msg=str(exc))
    if module.params["tuning"]:
        tuning = module.params["tuning"]
        if not len(tuning["tunables"]) == len(tuning["exists"]) == len(tuning["writeable"]):
            module.fail_json(msg="tuning: tunables, exists and writeable must have one entry per tunable")
        tuning = dict(tuning)
        path = tuning.pop("governors_path")
        if path and not tuning["governors"] and os.path.isfile(path):
            with open(path) as handle:
                tuning["governors"] = handle.read()
        result["tuning"] = base_report.tuning(**tuning)
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
