# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""Filter ``kunpeng.vllm.vllm_backups_to_prune``: which old snapshot folders the entry point snapshot removes."""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

DOCUMENTATION = r"""
name: vllm_backups_to_prune
author: kunpeng.vllm maintainers (@kunpeng-vllm)
version_added: "0.3.0"
short_description: The snapshot folders to remove so that a number of them remain
description:
  - Takes the names of the folders below C(vllm_backup_dir) and returns the oldest of the entry point C(snapshot)'s
    timestamp folders (C(YYYYMMDDTHHMMSSZ)) beyond O(keep) minus one, the snapshot about to be made counting as one.
  - Every snapshot holds a copy of the config directory, API keys included, so they are not kept for ever. Names of
    another form are never returned.
options:
  _input:
    description: The folder names below the backup directory.
    type: list
    elements: str
    required: true
  keep:
    description: How many snapshots remain, the new one included (C(vllm_backup_keep)); at least 1.
    type: int
    required: true
"""

EXAMPLES = r"""
- name: Remove the snapshots beyond vllm_backup_keep
  ansible.builtin.file:
    path: "{{ vllm_backup_dir }}/{{ item }}"
    state: absent
  loop: "{{ __vllm_backups.files | map(attribute='path') | map('basename') | kunpeng.vllm.vllm_backups_to_prune(vllm_backup_keep) }}"
"""

RETURN = r"""
_value:
  description: The folder names to remove, oldest first.
  type: list
  elements: str
"""

from ansible.errors import AnsibleFilterError  # noqa: E402
from ansible_collections.kunpeng.vllm.plugins.module_utils.execute.instance_lifecycle import backups_to_prune  # noqa: E402


def vllm_backups_to_prune(names, keep):
    """The snapshot folders to remove before a new snapshot, oldest first."""
    try:
        return backups_to_prune(list(names or []), keep)
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError(str(exc)) from exc


class FilterModule:
    """Snapshot retention filters."""

    def filters(self):
        return {"vllm_backups_to_prune": vllm_backups_to_prune}
