# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""Filter ``kunpeng.vllm.vllm_install_steps``: the plan's install steps, each with the installer that runs it."""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

DOCUMENTATION = r"""
name: vllm_install_steps
author: kunpeng.vllm maintainers (@kunpeng-vllm)
version_added: "0.3.0"
short_description: The plan's install steps, each with uv or pip to run it
description:
  - Takes the plan's C(role_steps) and adds C(installer) to each - C(tool) (C(uv) or C(pip)), C(argv) (the
    C(uv pip install) command line, empty for pip), C(reason) and C(source) (where the packages come from, without
    credentials, for the progress lines).
  - uv runs a step only offline (C(--no-index), local find-links), with no pip option but C(--no-deps) and no
    environment, and a uv binary on the node; otherwise pip. The decision is
    C(plugins/module_utils/plan/installer.py).
  - With O(installer=uv), a step uv cannot run is an error.
options:
  _input:
    description: The plan's C(role_steps).
    type: list
    elements: dict
    required: true
  pip_args:
    description: The plan's C(pip_args) (shared options of every step).
    type: list
    elements: str
    required: true
  installer:
    description: C(vllm_installer) - C(auto), C(pip) or C(uv).
    type: str
    required: true
  reuse_host_torch:
    description: C(vllm_reuse_host_torch).
    type: bool
    required: true
  uv:
    description: The node's uv binary (the RV(kunpeng.vllm.vllm_wheelhouse#module:uv) of its wheelhouse), or empty.
    type: str
    required: true
  venv:
    description: The engine virtualenv.
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Choose the installer of each step
  ansible.builtin.set_fact:
    steps: >-
      {{ kunpeng_vllm_plan.role_steps | kunpeng.vllm.vllm_install_steps(kunpeng_vllm_plan.pip_args, 'auto',
         false, '/opt/vllm/wheelhouse/.bin/uv', kunpeng_vllm_plan.venv) }}
"""

RETURN = r"""
_value:
  description: The steps, each with C(installer) (C(tool), C(argv), C(reason), C(source)) added.
  type: list
  elements: dict
"""

from ansible.errors import AnsibleFilterError  # noqa: E402
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import installer as chooser  # noqa: E402


def vllm_install_steps(steps, pip_args, installer, reuse_host_torch, uv, venv):
    """The steps with the installer of each; refuses a step uv cannot run when uv is asked for."""
    try:
        out = chooser.plan_steps(list(steps or []), list(pip_args or []), installer, bool(reuse_host_torch),
                                 uv or "", venv)
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError(str(exc)) from exc
    refused = [step for step in out if not step["installer"]["tool"]]
    if refused:
        raise AnsibleFilterError("vllm_installer is uv but uv cannot run the step {}: {}".format(
            refused[0].get("name", "?"), refused[0]["installer"]["reason"]))
    return out


class FilterModule:
    """Installer choice filters."""

    def filters(self):
        return {"vllm_install_steps": vllm_install_steps}
