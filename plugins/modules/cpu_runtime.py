#!/usr/bin/python
# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

DOCUMENTATION = r"""
---
module: cpu_runtime
short_description: Derive vLLM's CPU thread binding and KV-cache size from the probe
version_added: "0.2.0"
description:
  - vLLM's CPU backend reads C(VLLM_CPU_OMP_THREADS_BIND) (the CPUs of each rank, ranks separated by C(|)) and
    C(VLLM_CPU_KVCACHE_SPACE) (GiB of KV cache per rank). This module derives both from the probe
    (C(kunpeng_accelerators.cpu) of M(kunpeng.vllm.accelerator_facts)) when the user leaves them on auto.
  - Binding - each rank (tensor x pipeline parallel size) takes the CPUs of one NUMA node (several ranks per node
    split its CPUs evenly) and leaves its last CPU to the API server and the OS when it has more than one; ranks that
    do not divide over the nodes keep vLLM's own C(auto).
  - KV cache - a quarter of the host's memory over the ranks, at most half of one NUMA node's memory per rank, at
    least 1 GiB; the vLLM plan then checks that the weights fit beside it.
  - The decisions are plain functions of C(plugins/module_utils/plan/cpu_runtime.py). Changes nothing.
author:
  - kunpeng.vllm maintainers (@kunpeng-vllm)
options:
  cpu:
    description: C(kunpeng_accelerators.cpu) (C(logical_cpus), C(numa_nodes), C(numa_cpus), C(memory_mib)).
    type: dict
    required: true
  engine_args:
    description: The requested engine arguments (C(tensor_parallel_size), C(pipeline_parallel_size) count the ranks).
    type: dict
    default: {}
  omp_threads_bind:
    description: C(vllm_cpu_omp_threads_bind); anything but C(auto) is returned as is.
    type: str
    default: auto
  kvcache_space_gib:
    description: C(vllm_cpu_kvcache_space_gib); 0 derives it, a positive value is returned as is.
    type: int
    default: 0
extends_documentation_fragment:
  - kunpeng.vllm.attributes.read_only
"""

EXAMPLES = r"""
- name: Derive the CPU backend's thread binding and KV-cache size
  kunpeng.vllm.cpu_runtime:
    cpu: "{{ kunpeng_accelerators.cpu }}"
    engine_args: "{{ vllm_engine_args }}"
    omp_threads_bind: auto
    kvcache_space_gib: 0
  register: cpu_runtime
"""

RETURN = r"""
ranks:
  description: Ranks of the instance on this host (tensor x pipeline parallel size).
  returned: always
  type: int
  sample: 1
omp_threads_bind:
  description: The value of C(VLLM_CPU_OMP_THREADS_BIND).
  returned: always
  type: str
  sample: 0-46
omp_threads_bind_reason:
  description: Why, in words.
  returned: always
  type: str
  sample: 1 rank(s), each on one NUMA node; 1 CPU(s) left to the API server and the OS
kvcache_space_gib:
  description: The value of C(VLLM_CPU_KVCACHE_SPACE) (GiB per rank).
  returned: always
  type: int
  sample: 188
kvcache_space_reason:
  description: Why, in words.
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.cpu_runtime import cpu_environment  # noqa: E402


def main():
    module = AnsibleModule(
        argument_spec=dict(
            cpu=dict(type="dict", required=True),
            engine_args=dict(type="dict", default={}),
            omp_threads_bind=dict(type="str", default="auto"),
            kvcache_space_gib=dict(type="int", default=0),
        ),
        supports_check_mode=True,
    )
    p = module.params
    module.exit_json(changed=False, **cpu_environment(p["cpu"], p["engine_args"], p["omp_threads_bind"],
                                                      p["kvcache_space_gib"]))


if __name__ == "__main__":
    main()
