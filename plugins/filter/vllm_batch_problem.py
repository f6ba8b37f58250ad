# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""Filter ``kunpeng.vllm.vllm_batch_problem``: why an upgrade batch may not go out of service at once."""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

DOCUMENTATION = r"""
name: vllm_batch_problem
author: kunpeng.vllm maintainers (@kunpeng-vllm)
version_added: "0.3.0"
short_description: Why an upgrade batch would leave a gateway pool without a server
description:
  - Takes the hosts of one upgrade batch (C(ansible_play_batch)) and returns an empty string when the batch may be drained
    at once, else a sentence naming every gateway pool the batch would empty and the variable to change
    (C(upgrade_serial)).
  - The members of a multi-node instance count as one server. A pool of one server is never refused (no serial avoids
    its gap).
  - C(playbooks/upgrade.yml) fails the batch with it before anything is drained.
options:
  _input:
    description: The hosts of the batch.
    type: list
    elements: str
    required: true
  pools:
    description: The gateways' C(gateway_pools) (each with C(name) and C(group)).
    type: list
    elements: dict
    required: true
  groups:
    description: The inventory's groups (C(groups)).
    type: dict
    required: true
  cluster_of:
    description: Each host's C(vllm_cluster_group) (missing or empty for a host that serves alone).
    type: dict
    default: {}
  serial:
    description: The C(upgrade_serial) in force, for the message.
    type: raw
    default: 1
"""

EXAMPLES = r"""
- name: Check that this batch leaves every gateway pool a server
  ansible.builtin.fail:
    msg: "{{ ansible_play_batch | kunpeng.vllm.vllm_batch_problem(pools, groups, {}, upgrade_serial) }}"
  when: (ansible_play_batch | kunpeng.vllm.vllm_batch_problem(pools, groups, {}, upgrade_serial)) | length > 0
"""

RETURN = r"""
_value:
  description: Empty when the batch may go out of service at once, else why not and what to set.
  type: str
"""

from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.rollout import batch_problem  # noqa: E402


def vllm_batch_problem(batch, pools, groups, cluster_of=None, serial=1):
    """Why ``batch`` may not go out of service at once ('' when it may)."""
    return batch_problem(list(batch or []), list(pools or []), dict(groups or {}), dict(cluster_of or {}), serial)


class FilterModule:
    """Upgrade rollout filters."""

    def filters(self):
        return {"vllm_batch_problem": vllm_batch_problem}
