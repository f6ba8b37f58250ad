# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001


class ModuleDocFragment:
    """Documentation shared by the collection's read-only modules."""

    DOCUMENTATION = r"""
options: {}
"""

    # Modules that only read (probe, plan, verify): they run in check mode as
    # they do otherwise and never report a change.
    READ_ONLY = r"""
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: none
"""

    # Modules that return ansible_facts (the same wording as community.general's
    # attributes.facts fragment): what they return becomes host facts.
    FACTS = r"""
attributes:
  facts:
    description: Action returns an C(ansible_facts) dictionary that will update existing host facts.
    support: full
"""
