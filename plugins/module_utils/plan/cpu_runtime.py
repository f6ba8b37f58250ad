# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""Thread binding and KV-cache size of vLLM's CPU backend, from the probe.

vLLM's CPU backend runs one OpenMP worker per rank (tensor x pipeline
parallel) and reads two variables (vLLM documentation, "CPU" installation
page, "Related runtime environment variables"):

- ``VLLM_CPU_OMP_THREADS_BIND``: the CPUs of each rank, ranks separated by
  ``|``.  The documentation's advice: keep each rank on one NUMA node, and
  leave CPUs free for the serving frontend (the API server process) so the
  OpenMP threads do not compete with it.  Here each rank takes the CPUs of
  one NUMA node (node ``r`` for rank ``r``; several ranks per node split its
  CPUs evenly) and gives its last CPU back to the frontend and the OS when it
  has more than one, so a 2-CPU host binds one engine to CPU 0 and keeps CPU 1
  free.
- ``VLLM_CPU_KVCACHE_SPACE``: GiB of KV cache per rank.  Derived: a quarter
  of the host's memory over the ranks, at most half of one NUMA node's
  memory per rank (the rank allocates on its node), at least 1 GiB; the plan
  then checks that the weights fit beside it.

A value the user set is kept as is (the gateway scenario pins two engines of
one host to CPU 0 and CPU 1).
"""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

import re

AUTO_BIND = "auto"
AUTO_KV = 0
# Share of the host's memory the KV caches of all ranks take together.
KV_SHARE = 0.25
# Share of one NUMA node's memory one rank's KV cache may take.
KV_NODE_SHARE = 0.5
# vLLM's own default KV space (GiB), used when the probe read no memory size.
VLLM_DEFAULT_KV_GIB = 4


def parse_cpulist(text):
    """``0-3,8`` (sysfs ``cpulist``) -> ``[0, 1, 2, 3, 8]``; empty or unreadable text -> ``[]``."""
    cpus = []
    for part in (text or "").strip().split(","):
        match = re.match(r"^\s*(\d+)(?:-(\d+))?\s*$", part)
        if not match:
            continue
        first = int(match.group(1))
        last = int(match.group(2)) if match.group(2) else first
        cpus.extend(range(first, last + 1))
    return sorted(set(cpus))


def format_cpulist(cpus):
    """``[0, 1, 2, 3, 8]`` -> ``0-3,8``."""
    runs = []
    for cpu in sorted(cpus):
        if runs and cpu == runs[-1][1] + 1:
            runs[-1][1] = cpu
        else:
            runs.append([cpu, cpu])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def node_cpus(cpu_facts):
    """CPUs of each NUMA node from the probe's ``cpu`` facts (one node of every CPU when sysfs had none)."""
    lists = [parse_cpulist(text) for text in (cpu_facts.get("numa_cpus") or [])]
    lists = [cpus for cpus in lists if cpus]
    if lists:
        return lists
    count = cpu_facts.get("logical_cpus") or 0
    return [list(range(count))] if count else []


def omp_bind(cpu_facts, ranks, requested=AUTO_BIND):
    """``(VLLM_CPU_OMP_THREADS_BIND value, reason)`` for ``ranks`` ranks."""
    if requested != AUTO_BIND:
        return requested, "set by vllm_cpu_omp_threads_bind"
    ranks = max(int(ranks or 1), 1)
    nodes = node_cpus(cpu_facts)
    if not nodes:
        return AUTO_BIND, "the probe found no CPU list: vLLM binds the threads itself"
    if ranks <= len(nodes):
        sets = nodes[:ranks]
    elif ranks % len(nodes) == 0 and all(len(cpus) >= ranks // len(nodes) for cpus in nodes):
        per_node = ranks // len(nodes)
        sets = []
        for cpus in nodes:
            size = len(cpus) // per_node
            sets.extend(cpus[i * size:(i + 1) * size] for i in range(per_node))
    else:
        return AUTO_BIND, (f"{ranks} ranks do not divide over {len(nodes)} NUMA node(s) of "
                           f"{'/'.join(str(len(cpus)) for cpus in nodes)} CPUs: vLLM binds the threads itself")
    bound = [cpus[:-1] if len(cpus) > 1 else cpus for cpus in sets]
    value = "|".join(format_cpulist(cpus) for cpus in bound)
    kept = sum(len(a) - len(b) for a, b in zip(sets, bound))
    where = "NUMA node" if ranks <= len(nodes) else "share of a NUMA node"
    return value, (f"{ranks} rank(s), each on one {where}; {kept} CPU(s) left to the API server and the OS")


def kv_space_gib(cpu_facts, ranks, requested=AUTO_KV):
    """``(VLLM_CPU_KVCACHE_SPACE in GiB, reason)`` per rank."""
    if requested and int(requested) > 0:
        return int(requested), "set by vllm_cpu_kvcache_space_gib"
    memory_mib = cpu_facts.get("memory_mib")
    if not memory_mib:
        return VLLM_DEFAULT_KV_GIB, "the probe read no memory size: vLLM's default"
    ranks = max(int(ranks or 1), 1)
    nodes = max(cpu_facts.get("numa_nodes") or 1, 1)
    memory_gib = memory_mib / 1024.0
    share = memory_gib * KV_SHARE / ranks
    node_cap = memory_gib / nodes * KV_NODE_SHARE
    gib = max(int(min(share, node_cap)), 1)
    return gib, (f"{KV_SHARE:.0%} of {memory_gib:.0f} GiB over {ranks} rank(s), at most {KV_NODE_SHARE:.0%} "
                 f"of one of {nodes} NUMA node(s)")


def ranks_of(engine_args):
    """Ranks one instance runs on this host: tensor x pipeline parallel size."""
    args = engine_args or {}
    tensor = int(args.get("tensor_parallel_size") or args.get("tensor-parallel-size") or 1)
    pipeline = int(args.get("pipeline_parallel_size") or args.get("pipeline-parallel-size") or 1)
    return max(tensor, 1) * max(pipeline, 1)


def cpu_environment(cpu_facts, engine_args, bind=AUTO_BIND, kv_gib=AUTO_KV):
    """Both values with their reasons, for the module and the role."""
    ranks = ranks_of(engine_args)
    bind_value, bind_reason = omp_bind(cpu_facts, ranks, bind)
    kv_value, kv_reason = kv_space_gib(cpu_facts, ranks, kv_gib)
    return {
        "ranks": ranks,
        "omp_threads_bind": bind_value,
        "omp_threads_bind_reason": bind_reason,
        "kvcache_space_gib": kv_value,
        "kvcache_space_reason": kv_reason,
    }


# --- the served dtype ---------------------------------------------------------------------------
# Below this many parameters the CPU plan serves float32 whatever the CPU: the
# weights stay under 4 GiB, and a small model's greedy answer is what bfloat16
# rounding flips between kernel paths.  Measured with SmolLM2-135M-Instruct and
# vllm-cpu 0.32.0 at temperature 0: bfloat16 answers "Paris" on a CPU with
# AVX512-BF16 and no AMX, "L'Etoile, la Marseillaise" on one with AMX (oneDNN
# takes AMX tiles there); float32 answers "Paris" on both
# (tests/unit/fixtures/cpu_dtype/).
SMALL_MODEL_PARAMS = 1e9
DTYPE_SPELLINGS = {"float": "float32", "half": "float16"}


def native_bf16(cpu_facts):
    """Whether the probe found bfloat16 arithmetic in the CPU (AVX512-BF16 or AMX-BF16; Arm BF16)."""
    return bool(((cpu_facts or {}).get("features") or {}).get("bf16"))


def serve_dtype(cpu_facts, model, requested):
    """``(dtype or None, reason)``: the ``--dtype`` the CPU plan sets; ``None`` leaves vLLM's ``auto``.

    - ``vllm_engine_args.dtype`` is kept (``auto`` too: then vLLM chooses).
    - A model under :data:`SMALL_MODEL_PARAMS` is served in float32 on every CPU, so its answers do not depend on
      which kernels the CPU has (and the readiness check's expected answer holds on every host).
    - Otherwise bfloat16 where the CPU computes it natively (x86 ``avx512_bf16``/``amx_bf16``, Arm ``bf16``):
      half the memory and bandwidth of float32.  On x86 vLLM's CPU backend loads its AVX512-BF16 kernel library only
      there (``vllm/platforms/cpu.py``, ``import_kernels``; ``_C_AVX512`` or ``_C_AVX2`` otherwise).
    - Without native bfloat16 (AVX2-only or AVX512 without BF16; Kunpeng 920): float32, the format those CPUs
      compute in.  The capacity check then counts 4-byte weights.
    - Without probe facts and model the choice stays vLLM's ``auto``.
    """
    if (requested or {}).get("dtype"):
        given = str(requested["dtype"]).lower()
        return (None if given == "auto" else DTYPE_SPELLINGS.get(given, given)), "set in vllm_engine_args"
    params = ((model or {}).get("params") or {}).get("total")
    if params and params < SMALL_MODEL_PARAMS:
        return "float32", (f"a {params / 1e9:.2f}B-parameter model is served in float32 on every CPU: its greedy answers "
                           "do not depend on the CPU's bfloat16 kernels")
    features = (cpu_facts or {}).get("features")
    if not features:
        return None, "no probe of the CPU: vLLM's dtype auto (the checkpoint's 16-bit dtype)"
    if native_bf16(cpu_facts):
        return "bfloat16", "the CPU computes bfloat16 natively (AVX512-BF16/AMX or Arm BF16)"
    return "float32", "the CPU has no native bfloat16 (AVX512-BF16, AMX or Arm BF16): float32 is the format it computes in"
