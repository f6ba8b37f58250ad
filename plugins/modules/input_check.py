#!/usr/bin/python
# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

DOCUMENTATION = r"""
---
module: input_check
short_description: Check a role's variables before anything changes
version_added: "0.2.0"
description:
  - Checks the values a kunpeng.vllm role was given for what role argument validation cannot see - a value out of
    range, an engine option the requested vLLM release does not have, a path that does not exist, a name or value
    with shell, newline or control characters (values reach systemd units, the service environment file, YAML
    config files and command lines), a size that does not fit the host.
  - Fails with one message that lists every problem; each names the variable and the fix. Secret values are never
    repeated in it. Changes nothing.
  - The rules are the table C(RULES) of C(plugins/module_utils/plan/input_check.py), one per user-facing variable of each
    role's C(meta/argument_specs.yml).
author:
  - kunpeng.vllm maintainers (@kunpeng-vllm)
options:
  role:
    description:
      - Role whose variables these are - V(vllm), V(base), V(wheelhouse), V(monitoring), V(gateway) or the driver role of
        a backend (V(nvidia), V(ascend), ...); another name fails, naming the known ones.
    type: str
    required: true
  values:
    description: Variable name -> value, the role's non-secret variables.
    type: dict
    default: {}
  secrets:
    description: Variable name -> value for the secret variables (API key, tokens); never logged.
    type: dict
    default: {}
  environment_files:
    description:
      - Path -> text of the files of the vllm role's C(vllm_environment_files) (as read on the node). The unit and
        the launcher load them after the role's own environment file, so each variable they set is held to the rules
        of C(vllm_environment) (no C(VLLM_SERVER_DEV_MODE), C(LD_AUDIT), C(PYTHONPATH),
        C(KUNPENG_VLLM_METRICS_SOURCES), ..., single addresses in C(FORWARDED_ALLOW_IPS)); each problem names the
        file and the variable. Never logged (a file may hold secrets).
    type: dict
    default: {}
    version_added: 0.3.0
  where:
    description:
      - Where this run checks that the paths the variables name exist - C(node) (the managed host) or
        C(controller) (run the task delegated to localhost); C(controller) checks only those paths.
    type: str
    choices: [node, controller]
    default: node
  memory_mb:
    description: Host memory in MiB (C(ansible_facts.memtotal_mb)), for sizes that must fit the host; 0 skips that check.
    type: int
    default: 0
extends_documentation_fragment:
  - kunpeng.vllm.attributes.read_only
"""

EXAMPLES = r"""
- name: Check the role's values before anything changes
  kunpeng.vllm.input_check:
    role: vllm
    values:
      vllm_model_name: SmolLM2-135M-Instruct
      vllm_port: 8000
      vllm_engine_args: {max_model_len: 2048}
    secrets:
      vllm_api_key: "{{ vllm_api_key }}"
    memory_mb: "{{ ansible_facts['memtotal_mb'] }}"

- name: Check the controller paths
  kunpeng.vllm.input_check:
    role: vllm
    values:
      vllm_wheelhouse_src: /srv/wheelhouse
    where: controller
  delegate_to: localhost
"""

RETURN = r"""
problems:
  description: One message per problem, each starting with the variable's name; empty when every value is usable.
  returned: always
  type: list
  elements: str
  sample: ["vllm_port: 70000 is out of range; set a whole number from 1 to 65535"]
paths:
  description: Variable -> path checked for existence in this run.
  returned: always
  type: dict
  sample: {vllm_python: /usr/bin/python3}
msg:
  description: All problems in one sentence.
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import input_check  # noqa: E402


def main():
    module = AnsibleModule(
        argument_spec=dict(
            role=dict(type="str", required=True),
            values=dict(type="dict", default={}),
            secrets=dict(type="dict", default={}, no_log=True),
            environment_files=dict(type="dict", default={}, no_log=True),
            where=dict(type="str", default="node", choices=["node", "controller"]),
            memory_mb=dict(type="int", default=0),
        ),
        supports_check_mode=True,
    )
    p = module.params
    values = dict(p["values"])
    values.update(p["secrets"])
    if p["role"] not in input_check.RULES:
        module.fail_json(msg=f"unknown role {p['role']!r}; one of {', '.join(sorted(input_check.RULES))}")
    problems = []
    if p["where"] == "node":
        problems += input_check.check_values(p["role"], values, memory_mb=p["memory_mb"])
        problems += input_check.environment_file_problems(p["environment_files"])
    paths = input_check.paths_to_check(p["role"], values, p["where"])
    problems += input_check.missing_paths(paths, where=p["where"])
    result = dict(changed=False, problems=problems, paths=paths, msg=input_check.summary(problems))
    if problems:
        module.fail_json(**result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
