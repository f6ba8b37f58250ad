# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""Filter ``kunpeng.vllm.survey_answers``: the AWX survey answers that replace an inventory value."""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

DOCUMENTATION = r"""
name: survey_answers
author: kunpeng.vllm maintainers (@kunpeng-vllm)
version_added: "0.3.0"
short_description: The AWX survey answers that are not blank, under their role variable's name
description:
  - Takes the survey's variables (C(survey_<variable>), as the shipped surveys in C(docs/awx-surveys/) ask them) with
    their answers and returns C(<variable>) -> answer for each answer that is not blank.
  - Blank means null, an empty or all-blank text, or an empty selection. AWX has sent an unanswered optional text
    question as C("") and as C(null); either, sent as the role variable itself, would replace the inventory's value,
    since extra variables beat every other variable.
  - The entry playbooks set the result as facts first thing (the C(survey_answers) entry point of the internal
    C(kunpeng.vllm._common) role), so a blank question leaves the inventory's value, else the role default.
options:
  _input:
    description: C(survey_<variable>) -> answer; every key must carry the C(survey_) prefix.
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Take each answered survey question as its variable
  ansible.builtin.set_fact:
    "{{ item.key }}": "{{ item.value }}"
  loop: "{{ {'survey_vllm_port': 8001, 'survey_vllm_visible_devices': ''} | kunpeng.vllm.survey_answers | dict2items }}"
  # Sets vllm_port to 8001; vllm_visible_devices keeps the inventory's value.
"""

RETURN = r"""
_value:
  description: Variable name (without C(survey_)) -> answer, for the answers that are not blank.
  type: dict
"""

from ansible.errors import AnsibleFilterError  # noqa: E402
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.survey_answers import (  # noqa: E402
    survey_answers as _survey_answers,
)


def survey_answers(given):
    """The answers of ``given`` that are not blank, under their role variable's name."""
    try:
        return _survey_answers(dict(given or {}))
    except ValueError as error:
        raise AnsibleFilterError(f"survey_answers: {error}") from error


class FilterModule:
    """AWX survey filters."""

    def filters(self):
        return {"survey_answers": survey_answers}
