#!/usr/bin/python
# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

DOCUMENTATION = r"""
---
module: reboot_gate
short_description: Decide whether a host must reboot into its new accelerator driver before vLLM starts
version_added: "0.1.0"
description:
  - A driver role that installed a new NVIDIA driver (kunpeng.vllm.nvidia) or new Ascend firmware or driver
    (kunpeng.vllm.ascend) without being allowed to reboot (C(nvidia_reboot) / C(ascend_reboot) false, the
    default) reports C(reboot_pending) in its fact (C(kunpeng_nvidia) / C(kunpeng_ascend)). The kernel module
    is not loaded until the reboot, and a vLLM service started before it crash-loops.
  - This module decides, from the planned backend and those flags, whether the host stops before the
    service starts, and writes the message that names the variable to set. Only the driver of the planned
    backend counts. It changes nothing; acting on RV(stop) (for example with M(ansible.builtin.fail), which
    fails this host and lets the others go on) is up to the play.
author:
  - kunpeng.vllm maintainers (@kunpeng-vllm)
options:
  backend:
    description:
      - The planned backend (C(kunpeng_vllm_plan.backend)).
    type: str
    required: true
  driver_report:
    description:
      - The report fact of the backend's driver role (C(kunpeng_vllm_plan.driver.fact) names it,
        C(kunpeng_nvidia) or C(kunpeng_ascend)); its C(reboot_pending) key is read. Empty when that role did
        not run or the backend has no driver.
    type: dict
    default: {}
  host:
    description:
      - Host name the message starts with.
    type: str
extends_documentation_fragment:
  - kunpeng.vllm.attributes.read_only
"""

EXAMPLES = r"""
- name: Decide whether this host waits for a reboot into its new driver
  kunpeng.vllm.reboot_gate:
    backend: "{{ kunpeng_vllm_plan.backend }}"
    driver_report: "{{ kunpeng_nvidia | default({}) }}"
    host: "{{ inventory_hostname }}"
  register: reboot_gate

- name: Stop this host until it reboots (the other hosts go on)
  ansible.builtin.fail:
    msg: "{{ reboot_gate.msg }}"
  when: reboot_gate.stop
"""

RETURN = r"""
stop:
  description: Whether the host must reboot before its vLLM service starts.
  returned: always
  type: bool
  sample: true
variable:
  description: The role variable that lets the driver role reboot the host; null when nothing waits.
  returned: always
  type: str
  sample: nvidia_reboot
msg:
  description: What waits for the reboot and how to go on, naming RV(variable).
  returned: always
  type: str
  sample: >-
    gpu1: the new NVIDIA driver is installed but not loaded until the host reboots
    (kunpeng_nvidia.reboot_pending), and vLLM would crash-loop without it, so this host stops before its
    service starts. Set nvidia_reboot: true to let the role reboot it, or reboot it yourself, then run the
    playbook again. The other hosts go on.
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.reboot_gate import reboot_gate  # noqa: E402


def main():
    module = AnsibleModule(
        argument_spec=dict(
            backend=dict(type="str", required=True),
            driver_report=dict(type="dict", default={}),
            host=dict(type="str"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    module.exit_json(changed=False, **reboot_gate(p["backend"], p["driver_report"], p["host"]))


if __name__ == "__main__":
    main()
