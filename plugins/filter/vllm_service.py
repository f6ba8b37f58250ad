# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""Filter ``kunpeng.vllm.vllm_service``: the plan's service entry with the driver role's report of this run."""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

DOCUMENTATION = r"""
name: vllm_service
author: kunpeng.vllm maintainers (@kunpeng-vllm)
version_added: "0.2.0"
short_description: The plan's service entry, completed with the driver role's report
description:
  - Takes the plan (C(kunpeng_vllm_plan)) and returns its C(service) entry with what the backend's driver role
    reported replacing the plan's guess - the environment file, the device group and the device nodes (for
    example C(kunpeng_ascend.device_nodes)).
  - C(playbooks/site.yml) plans before the driver roles run; the vllm role renders this entry, so the unit gets
    what the driver role of the same run set up. Without the driver's fact the plan's entry comes back as it is.
  - The backend's record in C(plugins/module_utils/backends/) names the fact and its keys; the template holds
    no backend branch.
options:
  _input:
    description: The plan, as C(kunpeng.vllm.vllm_plan) returned it with a C(request) (it has C(backend) and C(service)).
    type: dict
    required: true
  driver_facts:
    description: The driver roles' facts by name (C(kunpeng_nvidia), C(kunpeng_ascend)); missing ones as C({}).
    type: dict
    default: {}
"""

EXAMPLES = r"""
- name: Show what the unit of this host will get
  ansible.builtin.debug:
    msg: "{{ kunpeng_vllm_plan | kunpeng.vllm.vllm_service({'kunpeng_ascend': kunpeng_ascend | default({})}) }}"
"""

RETURN = r"""
_value:
  description: The service entry - C(device_allow), C(supplementary_groups), C(environment), C(environment_files).
  type: dict
"""

from ansible.errors import AnsibleFilterError  # noqa: E402

from ansible_collections.kunpeng.vllm.plugins.module_utils.backends import registry as backends  # noqa: E402
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.service import with_driver  # noqa: E402


def vllm_service(plan, driver_facts=None):
    """The plan's service entry with the driver role's report."""
    if not isinstance(plan, dict) or not isinstance(plan.get("service"), dict):
        raise AnsibleFilterError("vllm_service takes the plan kunpeng.vllm.vllm_plan returned with a request "
                                 "(kunpeng_vllm_plan, which has a service entry)")
    try:
        record = backends.get(plan.get("backend"))
    except backends.UnknownBackend as err:
        raise AnsibleFilterError(f"vllm_service: {err}") from err
    return with_driver(plan["service"], record, dict(driver_facts or {}))


class FilterModule:
    """vLLM service filters."""

    def filters(self):
        return {"vllm_service": vllm_service}
