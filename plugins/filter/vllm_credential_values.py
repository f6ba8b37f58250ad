# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""Filter ``kunpeng.vllm.vllm_credential_values``: variables split into those without and those with URL credentials."""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

DOCUMENTATION = r"""
name: vllm_credential_values
author: kunpeng.vllm maintainers (@kunpeng-vllm)
version_added: "0.3.0"
short_description: Split variables into those without and those with credentials in a URL
description:
  - Takes a mapping of variable names to values and returns the part named by O(part). C(plain) holds the variables
    whose value (a string, or any string in a list or mapping) holds no URL with C(user[:password]@);
    C(credentials) holds the others.
  - The internal C(_common) role's input check passes C(credentials) in the no_log option of
    C(kunpeng.vllm.input_check), so such a value never shows in the play's output while its rules still check it.
options:
  _input:
    description: Variable name to value.
    type: dict
    required: true
  part:
    description: Which part to return.
    type: str
    choices: [plain, credentials]
    required: true
"""

EXAMPLES = r"""
- name: Check values, those with credentials in a URL hidden
  kunpeng.vllm.input_check:
    role: vllm
    values: "{{ role_values | kunpeng.vllm.vllm_credential_values('plain') }}"
    secrets: "{{ role_values | kunpeng.vllm.vllm_credential_values('credentials') }}"
"""

RETURN = r"""
_value:
  description: The variables of that part, name to value.
  type: dict
"""

from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.index_auth import credential_values  # noqa: E402


def vllm_credential_values(values, part):
    """The ``part`` (``plain`` or ``credentials``) of ``values`` (:func:`index_auth.credential_values`)."""
    return credential_values(values)[part]


class FilterModule:
    """Credential split filter."""

    def filters(self):
        return {"vllm_credential_values": vllm_credential_values}
