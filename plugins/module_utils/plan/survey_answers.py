# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""Which AWX survey answers become role variables (the entry playbooks' first step).

AWX hands a job its survey answers as extra variables, the highest precedence
Ansible has: nothing in a play can unset one.  An optional question left
blank has arrived as ``""`` (awx#9525) and as ``null`` (AWX 24.6.1,
awx#16205), and either would replace the inventory's value (an empty
``vllm_visible_devices`` means every device).  So the shipped surveys ask
for ``survey_<variable>`` instead, which no role reads, and
``survey_answers`` keeps only the answers that say something: the playbooks
set those as facts (they beat group_vars and host_vars) and leave the
inventory's value wherever a question was left blank.
"""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

from typing import Any, Dict, Mapping

SURVEY_PREFIX = "survey_"


def is_blank(value: Any) -> bool:
    """Whether an answer says nothing: null, an empty or all-blank text, an empty multiple selection."""
    if value is None:
        return True
    if isinstance(value, str):
        return not value.strip()
    return isinstance(value, (list, tuple, dict)) and not value


def survey_answers(given: Mapping[str, Any], prefix: str = SURVEY_PREFIX) -> Dict[str, Any]:
    """{variable: answer} for each ``<prefix><variable>`` of ``given`` whose answer is not blank.

    Answers keep their type (an integer question's answer stays an integer).  A name without the prefix, or the
    bare prefix, is a wiring mistake and raises ``ValueError`` naming it.
    """
    answers: Dict[str, Any] = {}
    for name in sorted(given):
        if not name.startswith(prefix) or len(name) == len(prefix):
            raise ValueError(f"{name!r} is not a survey variable ({prefix}<variable>)")
        if not is_blank(given[name]):
            answers[name[len(prefix):]] = given[name]
    return answers
