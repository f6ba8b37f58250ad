# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""Filter ``kunpeng.vllm.vllm_rehearsal``: is an engine config a rehearsal (random weights), and how is it checked?"""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

DOCUMENTATION = r"""
name: vllm_rehearsal
author: kunpeng.vllm maintainers (@kunpeng-vllm)
version_added: "0.3.0"
short_description: Tell whether vLLM engine options make a rehearsal with random weights
description:
  - Takes engine options (the vllm role's C(vllm_engine_args), or an engine config as C(vllm serve --config) reads it,
    dashes or underscores) and returns the rehearsal decision of C(plugins/module_utils/plan/rehearsal.py), the same
    function the plan uses.
  - A rehearsal (C(load_format=dummy)) serves random weights - its answers are NOT real - so
    M(kunpeng.vllm.vllm_ready) must not judge their text; with C(skip_tokenizer_init) the server cannot tokenize and
    the check sends token ids.
  - The model directory is not listed here, so C(weights) and C(tokenizer) are null; whether to skip the tokenizer
    follows the options' own C(skip_tokenizer_init).
  - The vllm role uses it to check a restored instance (its recorded engine config) the way it was served.
options:
  _input:
    description: Mapping of vLLM serve option names to values.
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Check an instance whose engine config is known
  kunpeng.vllm.vllm_ready:
    host: 127.0.0.1
    port: 8000
    model: deepseek-v2-lite
    rehearsal: "{{ (engine_config | kunpeng.vllm.vllm_rehearsal).enabled }}"
    prompt_token_ids: "{{ (engine_config | kunpeng.vllm.vllm_rehearsal).prompt_token_ids | default(omit, true) }}"
  vars:
    engine_config: {load-format: dummy, skip-tokenizer-init: true}
"""

RETURN = r"""
_value:
  description:
    - C(enabled), C(weights), C(tokenizer) (both null), C(skip_tokenizer_init), C(prompt_token_ids) (the readiness
      prompt when the server cannot tokenize, else null) and C(reason).
  type: dict
"""

from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.rehearsal import rehearsal  # noqa: E402


def vllm_rehearsal(engine_args):
    """The rehearsal decision for ``engine_args`` without a listing of the model directory."""
    return rehearsal(engine_args or {})


class FilterModule:
    """The rehearsal decision as a filter."""

    def filters(self):
        return {"vllm_rehearsal": vllm_rehearsal}
