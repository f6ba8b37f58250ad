# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""Filter ``kunpeng.vllm.vllm_url_credentials``: a URL without its credentials, and the credentials apart."""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

DOCUMENTATION = r"""
name: vllm_url_credentials
author: kunpeng.vllm maintainers (@kunpeng-vllm)
version_added: "0.3.0"
short_description: A URL without C(user:password@), and the user name and password it carried
description:
  - Takes a URL (C(vllm_model_src) of a C(url) model) and returns C(url) without C(user:password@) or C(token@), and
    C(username) and C(password) (unquoted, empty when the URL had none). C(url) is what a task prints or stores (a
    marker file, a fact, a failure message); C(username) and C(password) go to a module's credential options
    (C(ansible.builtin.get_url)'s C(url_username) and C(url_password), the latter never logged).
  - A text that is not a URL with credentials (a path, a repository id) comes back as C(url) unchanged.
options:
  _input:
    description: The URL.
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Download without the credentials in the URL
  ansible.builtin.get_url:
    url: "{{ (vllm_model_src | kunpeng.vllm.vllm_url_credentials).url }}"
    url_username: "{{ (vllm_model_src | kunpeng.vllm.vllm_url_credentials).username }}"
    url_password: "{{ (vllm_model_src | kunpeng.vllm.vllm_url_credentials).password }}"
    dest: /var/cache/vllm/model.archive
    mode: "0600"
"""

RETURN = r"""
_value:
  description: C(url) without credentials, C(username) and C(password).
  type: dict
"""

from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.index_auth import credentials  # noqa: E402


def vllm_url_credentials(url):
    """``url`` without its credentials, and its user name and password."""
    return credentials(url)


class FilterModule:
    """URL credential filter."""

    def filters(self):
        return {"vllm_url_credentials": vllm_url_credentials}
