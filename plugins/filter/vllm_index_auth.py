# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""Filter ``kunpeng.vllm.vllm_index_auth``: package index URLs without their credentials, and the netrc that holds them."""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

DOCUMENTATION = r"""
name: vllm_index_auth
author: kunpeng.vllm maintainers (@kunpeng-vllm)
version_added: "0.3.0"
short_description: Index URLs without credentials, and the netrc text of those credentials
description:
  - Takes an index URL and returns it without C(user:password@) or C(token@), the extra index URLs likewise, and the
    text of a netrc file with one C(machine) line per host that had credentials. pip reads that file when C(NETRC)
    names it, so the credentials stay out of pip's command line, the plan and its fact.
  - The result holds the credentials, so use it only in tasks with C(no_log).
options:
  _input:
    description: The index URL (C(vllm_pip_index_url)); empty for none.
    type: str
    required: true
  extra_index_urls:
    description: The extra index URLs (C(vllm_pip_extra_index_urls)).
    type: list
    elements: str
    default: []
"""

EXAMPLES = r"""
- name: Split the index credentials off the URLs
  ansible.builtin.set_fact:
    __vllm_index_auth: "{{ vllm_pip_index_url | kunpeng.vllm.vllm_index_auth(vllm_pip_extra_index_urls) }}"
  no_log: true
"""

RETURN = r"""
_value:
  description: C(index_url) and C(extra_index_urls) without credentials, and C(netrc) (empty when none had any).
  type: dict
"""

from ansible.errors import AnsibleFilterError  # noqa: E402
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.index_auth import index_auth  # noqa: E402


def vllm_index_auth(index_url, extra_index_urls=None):
    """The URLs without credentials and the netrc text of their credentials."""
    try:
        return index_auth(index_url, list(extra_index_urls or []))
    except ValueError as exc:
        raise AnsibleFilterError(str(exc)) from exc


class FilterModule:
    """Package index credential filters."""

    def filters(self):
        return {"vllm_index_auth": vllm_index_auth}
