# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""Filter ``kunpeng.vllm.vllm_engine_config``: checked ``vllm serve --config`` options."""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

DOCUMENTATION = r"""
name: vllm_engine_config
author: kunpeng.vllm maintainers (@kunpeng-vllm)
version_added: "0.1.0"
short_description: Validate and normalize options for C(vllm serve --config)
description:
  - Takes the O(_input) dictionary of vLLM serve options (the vllm role's C(vllm_engine_args)),
    written with underscores or dashes, and returns it with dash names, sorted, ready to be
    written as the YAML file that C(vllm serve --config) reads.
  - Fails with one message listing every problem, each naming the fix, instead of letting vLLM
    die at start-up on the target host.
  - Unknown names fail with the closest known names.
  - Retired or invented names fail with their replacement, for example C(device) (removed in vLLM 0.10;
    use C(CUDA_VISIBLE_DEVICES) / C(ASCEND_RT_VISIBLE_DEVICES) through C(vllm_visible_devices)),
    C(swap-space) (no effect in the V1 engine), C(engine-use-ascend) (the vllm-ascend plugin selects
    the NPU platform itself), C(launch-options) / C(LaunchOptions) (not a vLLM API),
    C(worker-use-ray) / C(engine-use-ray) (use C(distributed-executor-backend=ray)),
    C(vllm-host-ip) / C(vllm-port) (internal environment variables, not the API address; use C(host)
    / C(port)), C(disable-log-requests), C(task) and C(max-seq-len-to-capture).
  - Values are checked for shape; flags must be booleans, sizes integers (C(max-model-len) and
    C(max-num-batched-tokens) also take counts such as C(32k)), C(gpu-memory-utilization) must lie in
    (0, 1], ports in 1-65535, and options with a fixed set of values (C(dtype), C(runner),
    C(distributed-executor-backend), ...) must use one of them.
  - C(null) values are dropped, so an inventory can unset an option that a group set.
  - The option table was checked against the argument parser of vLLM 0.32.0 (and 0.11); it holds the
    options a deployment is expected to set, not all of vLLM's.
  - Given O(vllm_version), names are checked against that vLLM release's own options (captured from each
    release of the compatibility matrix), so an option a release lacks fails with a fix that release has, and
    an option it still has is accepted (C(swap-space) on 0.11).
options:
  _input:
    description: Mapping of vLLM serve option names (dashes or underscores, with or without leading C(--)) to values.
    type: dict
    required: true
  vllm_version:
    description:
      - The vLLM release the options are for (the plan row's C(vllm), or C(vllm_cpu) for CPU rows).
      - Empty, or a release without captured options, checks against the option table of vLLM 0.32.0.
    type: str
    default: ""
seealso:
  - name: vLLM serve arguments
    description: The options vLLM's OpenAI-compatible server accepts.
    link: https://docs.vllm.ai/en/latest/configuration/serve_args.html
"""

EXAMPLES = r"""
- name: Render the vLLM serve config
  ansible.builtin.copy:
    dest: /etc/vllm/smollm2.yaml
    content: "{{ vllm_engine_args | kunpeng.vllm.vllm_engine_config | to_nice_yaml }}"
    mode: "0640"
  vars:
    vllm_engine_args:
      max_model_len: 4096
      enforce_eager: true
      gpu-memory-utilization: 0.85

- name: Check the options against the release the plan installs
  ansible.builtin.debug:
    msg: "{{ vllm_engine_args | kunpeng.vllm.vllm_engine_config(kunpeng_vllm_plan.row.vllm | default(kunpeng_vllm_plan.row.vllm_cpu)) }}"

# {"gpu-memory-utilization": 0.85, "max-model-len": 4096, "tensor-parallel-size": 2}
- name: Show what the filter returns
  ansible.builtin.debug:
    msg: "{{ {'tensor_parallel_size': 2, 'max_model_len': 4096, 'gpu_memory_utilization': 0.85} | kunpeng.vllm.vllm_engine_config }}"
"""

RETURN = r"""
_value:
  description: The options with dash names, sorted by name, C(null) values removed.
  type: dict
"""

from ansible.errors import AnsibleFilterError  # noqa: E402

from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.engine_args import normalize_engine_args  # noqa: E402


def vllm_engine_config(engine_args, vllm_version=""):
    """Return normalized options or raise with every problem listed."""
    normalized, problems = normalize_engine_args(engine_args, vllm_version or None)
    if problems:
        plural = "" if len(problems) == 1 else "s"
        listing = "\n- ".join(problems)
        raise AnsibleFilterError(f"vllm_engine_args has {len(problems)} problem{plural}:\n- {listing}")
    return normalized


class FilterModule:
    """vLLM engine-argument filters."""

    def filters(self):
        return {"vllm_engine_config": vllm_engine_config}
