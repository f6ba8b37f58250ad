# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""Filter ``kunpeng.vllm.deb822_source``: the ansible.builtin.deb822_repository arguments of an apt source."""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

DOCUMENTATION = r"""
name: deb822_source
author: kunpeng.vllm maintainers (@kunpeng-vllm)
version_added: "0.3.0"
short_description: The ansible.builtin.deb822_repository arguments of one binary apt source
description:
  - Takes a repository URI and returns the arguments of M(ansible.builtin.deb822_repository) for it, checked first.
  - A flat repository (one suite ending in C(/), such as NVIDIA's CUDA repositories) takes no components; any other
    suite needs at least one. A source is signed by a keyring file or trusted, not both.
  - With O(path), the source's name must map to that file (the module names its file after the source's name), so a
    host that has the source from an earlier release gets it rewritten in place rather than a second copy beside it.
options:
  _input:
    description: The repository's URI.
    type: str
    required: true
  name:
    description: The source's name; the module writes C(/etc/apt/sources.list.d/<name>.sources).
    type: str
    required: true
  suites:
    description: The suites (a list, or a blank-separated text).
    type: raw
    required: true
  components:
    description: The components (a list, or a blank-separated text); none for a flat repository.
    type: raw
  keyring:
    description: Absolute path of the keyring that signs the repository (C(Signed-By)).
    type: str
    default: ""
  trusted:
    description: Trust the repository without a signature (a local test repository).
    type: bool
    default: false
  path:
    description: The C(.sources) file the source must be written to.
    type: str
"""

EXAMPLES = r"""
- name: Plan the CUDA repository's source
  ansible.builtin.set_fact:
    cuda_source: "{{ 'https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/'
      | kunpeng.vllm.deb822_source(name='kunpeng-vllm-cuda', suites=['/'],
                                   keyring='/etc/apt/keyrings/kunpeng-vllm-cuda.asc') }}"
  # {name: kunpeng-vllm-cuda, types: [deb], uris: [...], suites: ['/'],
  #  signed_by: /etc/apt/keyrings/kunpeng-vllm-cuda.asc}
"""

RETURN = r"""
_value:
  description: The module's arguments C(name), C(types), C(uris), C(suites), and C(components), C(signed_by), C(trusted)
    where they apply.
  type: dict
"""

from ansible.errors import AnsibleFilterError  # noqa: E402
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.apt_source import (  # noqa: E402
    deb822_source as _deb822_source,
)


def deb822_source(uri, name, suites, components=None, keyring="", trusted=False, path=None):
    """The checked ansible.builtin.deb822_repository arguments of the source at ``uri``."""
    try:
        return _deb822_source(uri, name, suites, components, keyring or "", bool(trusted), path)
    except ValueError as error:
        raise AnsibleFilterError(f"deb822_source: {error}") from error


class FilterModule:
    """apt source filters."""

    def filters(self):
        return {"deb822_source": deb822_source}
