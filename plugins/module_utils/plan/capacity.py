# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""Will a model fit, and how should it be split: weights, KV cache and parallel sizes from config.json.

The arithmetic is deliberately simple and written down, so an operator can
redo it on paper:

* Parameters are counted from ``config.json`` for the architectures of
  ``MODELLED_TYPES`` (Llama/Qwen-style dense models with GQA, first-generation
  Qwen whose ``intermediate_size`` covers gate and up together, Qwen/Mixtral
  MoE, DeepSeek-V2/V3-style MoE with MLA); any other is refused with a request
  for ``params_b``.  DeepSeek's multi-token-prediction layers
  (``num_nextn_predict_layers``) are reported but not loaded: vLLM only loads
  them for MTP speculative decoding.
* Weight bytes: linear layers at the checkpoint's format (bf16/fp16 2 bytes,
  fp8/w8a8/int8 1, 4-bit formats 0.5 plus about 3% for group scales, block-FP8
  plus one fp32 scale per 128x128 block); embeddings, the LM head, norms and
  router gates stay 16-bit whatever the format, as quantized checkpoints keep
  them (a GPTQ checkpoint with ``lm_head: true`` quantizes its head).
* Per device: layers split over pipeline stages as vLLM's ``get_pp_indices``
  splits them, each stage with its own layers (MoE and dense where they are),
  the embedding on the first and the LM head on the last; the heaviest stage
  counts.  Sharded weights are divided by the tensor-parallel size, MLA's
  low-rank input projections (``q_a_proj``, ``kv_a_proj_with_mqa``) replicated
  on every rank, routed experts divided by TP x DP with or without expert
  parallelism: vLLM's fused MoE layer flattens TP x DP into one group and
  either tensor-shards every expert over it (no EP) or gives each rank whole
  experts (EP) (``FusedMoEParallelConfig.make`` /
  ``flatten_tp_across_dp_and_pcp`` in vllm/model_executor/layers/fused_moe/config.py).
* KV cache per token: ``2 x layers x kv_heads x head_dim x bytes`` (MHA/GQA,
  kv heads divided by TP), ``(kv_lora_rank + qk_rope_head_dim) x layers x bytes``
  for MLA (the latent cache is replicated on every TP rank).
* Budget per device: ``device memory x gpu_memory_utilization``, where the device memory is what the engine
  sees (the backend's memory basis, :func:`engine_memory_bytes`), minus the
  weights, minus a margin built from what vLLM takes besides them (see
  :func:`overhead`: the driver's reservation, non-torch memory, an NCCL
  allowance per parallel group, and the peak activation of vLLM's profiling
  run from its batch defaults, the MLP width, hidden size and vocabulary);
  what is left holds the KV cache, which must take at least one full
  ``max_model_len`` sequence per concurrent sequence.  On the CPU backend the
  KV cache is the fixed ``VLLM_CPU_KVCACHE_SPACE`` and the host must hold
  weights + KV + a margin of ``max(3 GiB, 10% of host memory)`` for the runtime.
"""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

import math
from typing import Any, Dict, List, Optional, Tuple


GIB = 1024 ** 3
MIB = 1024 ** 2
BLOCK = 16  # vLLM's default KV block size: max_model_len is rounded down to it

# Bytes per parameter of the quantized linear layers.
WEIGHT_FORMATS: Dict[str, float] = {
    "fp32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "w8a8": 1.0,
    "int8": 1.0,
    "w4a8": 0.5 * 1.03,
    "int4": 0.5 * 1.03,
    "awq": 0.5 * 1.03,
    "gptq": 0.5 * 1.03,
}
FP8_BLOCK_SCALE = 4.0 / (128 * 128)  # one fp32 scale per 128x128 block
HIGH_PRECISION_BYTES = 2.0  # embeddings, LM head, norms, router gates
# The choices of ``vllm serve --kv-cache-dtype`` in vLLM 0.32 (the CacheDType literal of vllm/config/cache.py),
# exactly: vLLM refuses anything else at start, so the planner does too.  Value: bytes per cached element.
# 16-bit and 8-bit formats are exact (per-token scales are negligible); fp8_ds_mla stores 656 bytes per
# token and layer for the 576 latent elements (512 fp8 + 4 fp32 scales + 64 rope values in 16 bit).  The
# sub-byte formats are counted as 1 byte: their scales and layout are not modelled, and an upper bound only
# makes the planned max_model_len smaller than what fits, never larger.
KV_DTYPES: Dict[str, float] = {
    "auto": 2, "float16": 2, "bfloat16": 2,
    "fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1, "fp8_inc": 1, "fp8_ds_mla": 656 / 576,
    "nvfp4_ds_mla": 1, "turboquant_k8v4": 1, "turboquant_4bit_nc": 1, "turboquant_k3v4_nc": 1, "turboquant_3bit_nc": 1,
    "ultraquant_4bit": 1, "int4_per_token_head": 1, "int8_per_token_head": 1, "fp8_per_token_head": 1,
    "nvfp4": 1, "nvfp4_4over6": 1,
}
# Spellings vLLM does not take, with the choice meant.
_KV_DTYPE_SPELLINGS = {"bf16": "bfloat16", "fp16": "float16", "half": "float16", "float": "float16"}
# kv_cache_dtype auto caches in the dtype the model is served in: ``vllm serve --dtype`` (auto serves a
# 16-bit or float32 checkpoint in 16 bit).  Measured on vllm-cpu 0.32.0: 1 GiB of KV space held 46,592
# SmolLM2 tokens in bfloat16 and 23,296 with --dtype float32 (tests/unit/fixtures/vllm/cpu-kv).
_SERVE_DTYPE_BYTES = {"auto": 2, "bfloat16": 2, "float16": 2, "half": 2, "float32": 4, "float": 4}
_TORCH_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "half": "fp16", "float32": "fp32", "float": "fp32"}


class PlanError(Exception):
    """A request that can never work (a parallel size that does not divide the model, too many devices...)."""


def _gib(value: float) -> float:
    return round(value / GIB, 2)


# --- the model ----------------------------------------------------------------------------------

def weight_format_from_config(config: Dict[str, Any]) -> Tuple[str, bool, str]:
    """``(format, block_fp8, why)`` from ``quantization_config`` or the checkpoint dtype."""
    quant = config.get("quantization_config") or {}
    method = str(quant.get("quant_method") or "").lower().replace("_", "-")
    if method:
        if method == "fp8":
            block = bool(quant.get("weight_block_size"))
            return "fp8", block, "quantization_config.quant_method fp8" + (" with weight_block_size (block FP8)" if block else "")
        if method in ("awq", "gptq", "awq-marlin", "gptq-marlin"):
            bits = int(quant.get("bits") or 4)
            return ("int4" if bits <= 4 else "int8"), False, f"quantization_config {method} {bits}-bit"
        if method == "compressed-tensors":
            for group in (quant.get("config_groups") or {}).values():
                weights = group.get("weights") or {}
                acts = group.get("input_activations")
                bits = int(weights.get("num_bits") or 8)
                if weights.get("type") == "float" and bits == 8:
                    return "fp8", False, "compressed-tensors FP8"
                if bits <= 4:
                    return ("w4a8" if acts else "int4"), False, f"compressed-tensors {bits}-bit weights"
                return ("w8a8" if acts else "int8"), False, "compressed-tensors 8-bit weights"
        raise PlanError(f"quantization_config.quant_method {method!r} is not modelled; declare weight_dtype")
    dtype = str(config.get("torch_dtype") or config.get("dtype") or "bfloat16").lower().replace("torch.", "")
    fmt = _TORCH_DTYPES.get(dtype, "bf16")
    if fmt == "fp32":
        return "bf16", False, "float32 checkpoint, served in 16-bit by vLLM's dtype auto"
    return fmt, False, f"checkpoint dtype {dtype}"


def _moe_spec(config: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    experts = config.get("n_routed_experts") or config.get("num_local_experts") or config.get("num_experts")
    if not experts:
        return None
    layers = config["num_hidden_layers"]
    dense = set(range(int(config.get("first_k_dense_replace") or 0)))
    dense |= set(config.get("mlp_only_layers") or [])
    step = int(config.get("moe_layer_freq") or config.get("decoder_sparse_step") or 1)
    moe_layers = [i for i in range(layers) if i not in dense and i % step == 0] if step > 1 else \
        [i for i in range(layers) if i not in dense]
    inter = config.get("moe_intermediate_size") or config["intermediate_size"]
    shared_inter = (config.get("n_shared_experts") or 0) * inter
    if config.get("shared_expert_intermediate_size"):
        shared_inter = config["shared_expert_intermediate_size"]
    return {
        "experts": int(experts),
        "experts_per_token": int(config.get("num_experts_per_tok") or 1),
        "intermediate": int(inter),
        "shared_intermediate": int(shared_inter),
        "moe_layers": len(moe_layers),
        "moe_layer_ids": moe_layers,
        "dense_layers": layers - len(moe_layers),
    }


# The ``model_type`` values whose weights the formulas below count, with the upstream model file each follows.
# Anything else is refused: the planner asks for ``params_b`` and ``weight_dtype`` rather than guess.
MODELLED_TYPES: Dict[str, str] = {
    "llama": "vllm/model_executor/models/llama.py",
    "mistral": "vllm/model_executor/models/llama.py (MistralForCausalLM is a Llama)",
    "qwen": "vllm/model_executor/models/qwen.py (QWenLMHeadModel)",
    "qwen2": "vllm/model_executor/models/qwen2.py",
    "qwen3": "vllm/model_executor/models/qwen3.py",
    "qwen2_moe": "vllm/model_executor/models/qwen2_moe.py",
    "qwen3_moe": "vllm/model_executor/models/qwen3_moe.py",
    "mixtral": "vllm/model_executor/models/mixtral.py",
    "deepseek_v2": "vllm/model_executor/models/deepseek_v2.py",
    "deepseek_v3": "vllm/model_executor/models/deepseek_v2.py (DeepseekV3ForCausalLM)",
}
# Types whose attention projections carry a bias (q, k, v): Qwen2's qkv_proj and first-generation Qwen's
# c_attn are built with bias=True (vllm/model_executor/models/qwen2.py, qwen.py).
_QKV_BIAS_TYPES = ("qwen", "qwen2", "qwen2_moe")


def model_from_config(config: Dict[str, Any]) -> Dict[str, Any]:
    """Parameter buckets, attention kind and KV shape of a Llama/Qwen-style or DeepSeek-V2/V3-style config."""
    if config.get("text_config") and not config.get("hidden_size"):
        config = dict(config["text_config"], quantization_config=config.get("quantization_config"))
    model_type = config.get("model_type")
    if model_type not in MODELLED_TYPES:
        arch = ", ".join(config.get("architectures") or []) or "no architectures"
        raise PlanError(f"config.json model_type {model_type!r} ({arch}) is not an architecture the planner models "
                        f"({', '.join(sorted(MODELLED_TYPES))}); declare params_b and weight_dtype instead")
    try:
        hidden = int(config["hidden_size"])
        layers = int(config["num_hidden_layers"])
        vocab = int(config["vocab_size"])
        heads = int(config["num_attention_heads"])
    except (KeyError, TypeError, ValueError) as exc:
        raise PlanError(f"config.json lacks {exc}; declare params_b and weight_dtype instead") from None
    kv_heads = int(config.get("num_key_value_heads") or heads)
    tied = bool(config.get("tie_word_embeddings", False))
    intermediate = int(config.get("intermediate_size") or 4 * hidden)
    if model_type == "qwen":
        # First-generation Qwen's intermediate_size covers gate and up together: each projection is half as wide
        # (QWenMLP(config.hidden_size, config.intermediate_size // 2) in vllm/model_executor/models/qwen.py,
        # ff_dim_in = config.intermediate_size // 2 in Qwen/Qwen-7B's modeling_qwen.py).
        intermediate //= 2
    mla = bool(config.get("kv_lora_rank"))
    moe = _moe_spec(config)

    sharded = replicated = small = 0
    small_per_layer = 2 * hidden
    if mla:
        q_lora = config.get("q_lora_rank")
        kv_lora = int(config["kv_lora_rank"])
        nope, rope, v_dim = int(config["qk_nope_head_dim"]), int(config["qk_rope_head_dim"]), int(config["v_head_dim"])
        if q_lora:
            attn_replicated = hidden * int(q_lora)
            attn_sharded = int(q_lora) * heads * (nope + rope)
            small_per_layer += int(q_lora)
        else:
            attn_replicated = 0
            attn_sharded = hidden * heads * (nope + rope)
        attn_replicated += hidden * (kv_lora + rope)
        attn_sharded += kv_lora * heads * (nope + v_dim) + heads * v_dim * hidden
        small_per_layer += kv_lora
        kv_per_token_elems = (kv_lora + rope) * layers
        head_dim = nope + rope
    else:
        head_dim = int(config.get("head_dim") or config.get("kv_channels") or hidden // heads)
        attn_replicated = 0
        attn_sharded = hidden * heads * head_dim + 2 * hidden * kv_heads * head_dim + heads * head_dim * hidden
        if config.get("attention_bias") or model_type in _QKV_BIAS_TYPES:
            small_per_layer += (heads + 2 * kv_heads) * head_dim
        kv_per_token_elems = 2 * layers * kv_heads * head_dim

    dense_mlp = 3 * hidden * intermediate
    experts = active_experts = 0
    mtp_layer = 0
    if moe:
        expert = 3 * hidden * moe["intermediate"]
        experts = moe["moe_layers"] * moe["experts"] * expert
        active_experts = moe["moe_layers"] * moe["experts_per_token"] * expert
        shared = 3 * hidden * moe["shared_intermediate"]
        router = moe["experts"] * hidden + (moe["experts"] if config.get("topk_method") == "noaux_tc" else 0)
        sharded = layers * attn_sharded + moe["dense_layers"] * dense_mlp + moe["moe_layers"] * shared
        small = layers * small_per_layer + moe["moe_layers"] * router
        mtp_layer = attn_sharded + attn_replicated + moe["experts"] * expert + shared + router + small_per_layer
    else:
        sharded = layers * (attn_sharded + dense_mlp)
        small = layers * small_per_layer
        mtp_layer = attn_sharded + attn_replicated + dense_mlp + small_per_layer
    replicated = layers * attn_replicated
    small += hidden  # final norm
    embed = vocab * hidden
    lm_head = 0 if tied else vocab * hidden
    total = embed + lm_head + sharded + replicated + experts + small
    mtp_layers = int(config.get("num_nextn_predict_layers") or 0)
    mtp = mtp_layers * (mtp_layer + 2 * hidden * hidden + 3 * hidden)
    # One decoder layer by bucket, for the stages of a pipeline (vLLM puts whole layers on a stage).
    per_layer = {"attn_sharded": attn_sharded, "attn_replicated": attn_replicated, "small": small_per_layer,
                 "dense_mlp": dense_mlp, "moe_shared": shared if moe else 0, "moe_experts": moe["experts"] * expert if moe else 0,
                 "moe_router": router if moe else 0}

    fmt, block, why = weight_format_from_config(config)
    return {
        "name": config.get("_name_or_path") or (config.get("architectures") or [config.get("model_type") or "model"])[0],
        "model_type": config.get("model_type"),
        "attention": "mla" if mla else ("mha" if kv_heads == heads else "gqa"),
        "moe": bool(moe),
        "experts": moe["experts"] if moe else 0,
        "experts_per_token": moe["experts_per_token"] if moe else 0,
        "layers": layers,
        "heads": heads,
        "kv_heads": 1 if mla else kv_heads,
        "head_dim": head_dim,
        "kv_per_token_elems": kv_per_token_elems,
        "max_position_embeddings": int(config.get("max_position_embeddings") or 0) or None,
        "hidden": hidden,
        "vocab": vocab,
        "tied": tied,
        # the widest MLP a token passes through, per token: a dense layer's gate + up + activation, or its routed
        # experts' (gate + up + activation + output) plus the shared experts
        "mlp_width": max(3 * intermediate if moe is None or moe["dense_layers"] else 0,
                         (moe["experts_per_token"] * (3 * moe["intermediate"] + hidden) + 3 * moe["shared_intermediate"]) if moe else 0),
        # the routed experts' fused-MoE workspace per token (gate + up, activation, output of each chosen expert)
        "moe_workspace": moe["experts_per_token"] * (3 * moe["intermediate"] + hidden) if moe else 0,
        "per_layer": per_layer,
        "moe_layer_ids": moe["moe_layer_ids"] if moe else [],
        # GPTQ checkpoints may quantize the LM head too ("lm_head": true, GPTQConfig.lm_head_quantized in
        # vllm/model_executor/layers/quantization/gptq.py); every other method leaves it 16-bit
        "lm_head_quantized": bool((config.get("quantization_config") or {}).get("lm_head")),
        "params": {"embed": embed, "lm_head": lm_head, "sharded": sharded, "replicated": replicated,
                   "experts": experts, "small": small, "mtp": mtp, "total": total,
                   # compute per token: no input embedding lookup, only the routed experts a token uses
                   "active": total - embed - experts + active_experts},
        "weight_dtype": fmt,
        "block_fp8": block,
        "weight_dtype_reason": why,
    }


def model_from_declared(params_b: float, weight_dtype: str) -> Dict[str, Any]:
    """A model known only by size: no KV shape, no head count."""
    total = int(params_b * 1e9)
    return {
        "name": f"{params_b:g}B model", "model_type": None, "attention": None, "moe": False, "experts": 0,
        "experts_per_token": 0, "layers": None, "heads": None, "kv_heads": None, "head_dim": None,
        "kv_per_token_elems": None, "max_position_embeddings": None, "hidden": None, "vocab": None, "tied": False,
        "mlp_width": None, "moe_workspace": 0, "per_layer": None, "moe_layer_ids": [], "lm_head_quantized": False,
        "params": {"embed": 0, "lm_head": 0, "sharded": total, "replicated": 0, "experts": 0, "small": 0,
                   "mtp": 0, "total": total, "active": total},
        "weight_dtype": weight_dtype, "block_fp8": False, "weight_dtype_reason": "declared",
    }


def bytes_per_param(fmt: str, block_fp8: bool = False) -> float:
    per = WEIGHT_FORMATS[fmt]
    return per * (1 + FP8_BLOCK_SCALE) if block_fp8 else per


def high_precision_bytes(fmt: str) -> float:
    """Bytes per parameter of the embeddings, LM head, norms and router gates of a checkpoint in ``fmt``.

    Quantization methods replace linear layers only: AWQ, GPTQ, FP8 and compressed-tensors return a quantized
    method for ``LinearBase`` (and ``FusedMoE``) layers and leave ``VocabParallelEmbedding`` / ``ParallelLMHead``
    unquantized (``get_quant_method`` in vllm/model_executor/layers/quantization/awq.py, gptq.py, fp8.py), so
    those stay 16-bit whatever the linear format; only a float32 checkpoint would be wider, and vLLM serves it
    in 16 bit.
    """
    return max(HIGH_PRECISION_BYTES, WEIGHT_FORMATS[fmt])


def _head_bytes(model: Dict[str, Any], fmt: str) -> float:
    """Bytes per LM-head parameter: 16-bit, or the linear format where the checkpoint quantizes it (GPTQ)."""
    return bytes_per_param(fmt) if model.get("lm_head_quantized") else high_precision_bytes(fmt)


def weight_bytes(model: Dict[str, Any], fmt: Optional[str] = None) -> float:
    """Bytes of the loaded weights (MTP layers excluded)."""
    fmt = fmt or model["weight_dtype"]
    p = model["params"]
    linear = p["sharded"] + p["replicated"] + p["experts"]
    high = high_precision_bytes(fmt)
    quantized = linear * bytes_per_param(fmt, model["block_fp8"] and fmt == "fp8")
    return quantized + (p["embed"] + p["small"]) * high + p["lm_head"] * _head_bytes(model, fmt)


def served_weight_format(model: Dict[str, Any], requested: Dict[str, Any]) -> str:
    """The format the weights take in memory: a 16-bit checkpoint served with ``dtype`` float32 is upcast on load."""
    served = _TORCH_DTYPES.get(str(requested.get("dtype") or "auto").lower())
    if served == "fp32" and model["weight_dtype"] in ("bf16", "fp16"):
        return "fp32"
    return model["weight_dtype"]


def kv_cache_bytes(requested: Dict[str, Any]) -> Tuple[str, float]:
    """``(choice, bytes per element)`` of the requested ``kv_cache_dtype``; anything vLLM refuses raises."""
    name = requested.get("kv_cache_dtype") or "auto"
    if name == "auto":
        return name, _SERVE_DTYPE_BYTES.get(str(requested.get("dtype") or "auto").lower(), KV_DTYPES["auto"])
    if name in KV_DTYPES:
        return name, KV_DTYPES[name]
    meant = _KV_DTYPE_SPELLINGS.get(str(name).lower())
    hint = f"use {meant}" if meant else f"use one of {', '.join(KV_DTYPES)}"
    raise PlanError(f"kv_cache_dtype {name} is not a choice of vLLM's --kv-cache-dtype, so the engine would not start; {hint}")


def kv_bytes_per_token(model: Dict[str, Any], kv_bytes: float) -> Optional[int]:
    if model["kv_per_token_elems"] is None:
        return None
    return math.ceil(model["kv_per_token_elems"] * kv_bytes)


def pipeline_partition(layers: int, pp: int) -> List[int]:
    """Layers per pipeline stage as vLLM splits them: evenly, the remainder going one each to the stages before the
    last, from the second-to-last backwards (``get_pp_indices`` in vllm/distributed/utils.py; the last stage
    carries the final norm and the LM head, the first the embedding)."""
    if pp > layers:
        raise PlanError(f"pipeline_parallel_size {pp} exceeds the model's {layers} layers")
    parts = [layers // pp] * pp
    for i in range(2, layers % pp + 2):
        parts[-i] += 1
    return parts


def _stages(model: Dict[str, Any], pp: int) -> List[Dict[str, Any]]:
    """Each stage's layer range, and whether it holds the embedding / the LM head."""
    layers = model["layers"]
    if not layers:
        return [{"start": 0, "end": 0, "layers": None, "first": i == 0, "last": i == pp - 1} for i in range(pp)]
    stages, start = [], 0
    for i, count in enumerate(pipeline_partition(layers, pp)):
        stages.append({"start": start, "end": start + count, "layers": count, "first": i == 0, "last": i == pp - 1})
        start += count
    return stages


def stage_weight_bytes(model: Dict[str, Any], fmt: str, tp: int, dp: int, stage: Dict[str, Any], pp: int) -> float:
    """Weights of one pipeline stage on one device.

    A stage holds its own decoder layers (MoE layers and dense layers counted where they are), the embedding
    on the first stage and the LM head plus the final norm on the last; with tied embeddings and more than
    one stage the last stage loads its own copy of the embedding as the head (``LlamaModel``: ``embed_tokens``
    on the first rank, or on the last rank when ``tie_word_embeddings``; vllm/model_executor/models/llama.py).
    Sharded weights are divided by TP, routed experts by TP x DP (see the module docstring).
    """
    p = model["params"]
    per = bytes_per_param(fmt, model["block_fp8"] and fmt == "fp8")
    high = high_precision_bytes(fmt)
    layer = model.get("per_layer")
    if layer is None or not model["layers"]:
        # a declared size: no layer structure, an even share of the body
        body = (p["sharded"] * per / tp + p["experts"] * per / (tp * dp) + p["replicated"] * per + p["small"] * high) / pp
    else:
        count = stage["layers"]
        moe = sum(1 for i in model["moe_layer_ids"] if stage["start"] <= i < stage["end"])
        dense = count - moe
        attention = count * (layer["attn_sharded"] * per / tp + layer["attn_replicated"] * per + layer["small"] * high)
        experts = moe * (layer["moe_shared"] * per / tp + layer["moe_experts"] * per / (tp * dp) + layer["moe_router"] * high)
        body = attention + dense * layer["dense_mlp"] * per / tp + experts
        if stage["last"]:
            body += model["hidden"] * high  # final norm
    ends = 0.0
    if stage["first"]:
        ends += p["embed"] * high
    if stage["last"]:
        if p["lm_head"]:
            ends += p["lm_head"] * _head_bytes(model, fmt)
        elif pp > 1:
            ends += p["embed"] * high  # tied: the last stage's own copy of the embedding
    return body + ends / tp


def per_device_weight_bytes(model: Dict[str, Any], fmt: str, tp: int, pp: int, dp: int, ep: bool) -> float:
    """Weights on the heaviest device.  ``ep`` changes how the routed experts are split, not how much each rank holds."""
    return max(stage_weight_bytes(model, fmt, tp, dp, stage, pp) for stage in _stages(model, pp))


def _stage_kv_bytes_per_token(model: Dict[str, Any], kv_bytes: float, tp: int, layers: int) -> float:
    if model["attention"] == "mla":
        return model["kv_per_token_elems"] / model["layers"] * layers * kv_bytes
    kv_heads = math.ceil(model["kv_heads"] / tp)
    return 2 * layers * kv_heads * model["head_dim"] * kv_bytes


def per_device_kv_bytes_per_token(model: Dict[str, Any], kv_bytes: float, tp: int, pp: int) -> Optional[float]:
    """KV bytes per token on the stage with the most layers."""
    if model["kv_per_token_elems"] is None:
        return None
    return _stage_kv_bytes_per_token(model, kv_bytes, tp, max(pipeline_partition(model["layers"], pp)))


# --- the devices an instance may use --------------------------------------------------------------

def visible_devices(visible: Optional[Dict[str, Any]], facts: Dict[str, Any], spec: Any) -> Optional[Dict[str, Any]]:
    """The devices of ``vllm_visible_devices`` (``"0,1"``), counted and sized from the probe.

    CUDA names a GPU by its index or UUID, Ascend an NPU chip by its logic id (the ids
    ``ASCEND_RT_VISIBLE_DEVICES`` takes); ``visible`` is the backend's ``visible`` field.  Returns ``None`` when every device is visible
    (empty spec) or the backend has no such variable (cpu); raises :class:`PlanError` for
    an id the probe does not know.  Without a working driver tool the probe lists no
    devices, so only the count is known.
    """
    ids = [part.strip() for part in str(spec if spec is not None else "").split(",") if part.strip()]
    if not ids or not visible:
        return None
    if len(set(ids)) != len(ids):
        raise PlanError(f"vllm_visible_devices {spec} names a device twice")
    section, key, id_keys, variable = visible["section"], visible["devices"], visible["id_keys"], visible["variable"]
    devices = (facts.get(section) or {}).get(key) or []
    if not devices:
        return {"ids": ids, "count": len(ids), "memory_mib": None, "variable": variable, "devices": []}
    chosen = []
    for wanted in ids:
        match = next((d for d in devices if any(str(d.get(k)) == wanted for k in id_keys if d.get(k) is not None)), None)
        if match is None:
            known = ", ".join(str(d.get(id_keys[0])) for d in devices)
            raise PlanError(f"vllm_visible_devices {spec}: {wanted} is not a device of this host ({variable} ids here: {known})")
        chosen.append(match)
    memory = [d.get("device_memory_mib") for d in chosen if d.get("device_memory_mib")]
    return {"ids": ids, "count": len(ids), "memory_mib": min(memory) if memory else None, "variable": variable, "devices": chosen}


# --- parallel layouts ----------------------------------------------------------------------------

def valid_tensor_parallel(model: Dict[str, Any], devices_per_node: int) -> List[int]:
    """Powers of two dividing the per-node device count and the attention heads (KV heads shard or replicate evenly)."""
    sizes = []
    size = 1
    while size <= max(1, devices_per_node):
        if devices_per_node % size == 0 and tensor_parallel_problem(model, size) is None:
            sizes.append(size)
        size *= 2
    return sizes


def tensor_parallel_problem(model: Dict[str, Any], tp: int) -> Optional[str]:
    heads, kv_heads = model["heads"], model["kv_heads"]
    if heads and heads % tp:
        return f"tensor_parallel_size {tp} does not divide the model's {heads} attention heads"
    if kv_heads and model["attention"] != "mla" and kv_heads % tp and tp % kv_heads:
        return f"tensor_parallel_size {tp} neither divides nor is a multiple of the model's {kv_heads} KV heads"
    return None


# --- what vLLM keeps from the KV cache on each device ------------------------------------------------
#
# vLLM gives the KV cache ``gpu_memory_utilization x the memory CUDA reports`` minus the weights, the peak
# activation of its profiling run and the memory that grew outside torch (``Worker.determine_available_memory``
# in vllm/v1/worker/gpu_worker.py).  Each term below is what the H200 logs of
# tests/unit/fixtures/nvidia/h200/kv show (README: "Planner accuracy"); the sum is the plan's margin.
#
# CUDA reports less than nvidia-smi's total: the driver's reservation (``fb_memory_usage/reserved`` of
# ``nvidia-smi -q``): 616 of 143771 MiB on the H200 (0.43 %), 329 of 81559 MiB on the H100 (0.40 %).
CUDA_RESERVED_FRACTION = 0.0045
# Non-torch memory that grows during start-up on one device (cuBLAS/cuDNN workspaces, the sampler's kernels):
# the measured residue after the activation terms below is at most 0.25 GiB on the three H200 logs.
NON_TORCH_BYTES = 0.25 * GIB
# NCCL and vLLM's custom all-reduce buffers, per parallel group of more than one rank (tensor, pipeline, data).
# NOT measured: the H200 host has one GPU.  NCCL's default is 4 MiB (NCCL_BUFFSIZE) per channel and peer,
# up to 32 channels on NVLink, plus the registered all-reduce buffers; 0.5 GiB per group covers that.
NCCL_BYTES_PER_GROUP = 0.5 * GIB
# Peak activation of the profiling run (``profile_run``: one forward over max_num_batched_tokens tokens, then
# the sampler over max_num_seqs rows of logits).  Per token of the batch: the widest MLP (gate + up +
# activation, or the routed experts' buffers) in 16 bit, and four hidden-size buffers (residual, norm output,
# attention output, all-reduce); per sequence of the sampler: the logits in float32 twice (logits and
# probabilities).
HIDDEN_BUFFERS = 4
SAMPLER_COPIES = 2
# vLLM's batch defaults for ``vllm serve`` (``EngineArgs.get_batch_defaults`` in vllm/engine/arg_utils.py):
# max_num_batched_tokens 8192 and max_num_seqs 1024 on devices of 70 GiB or more (A100 excepted, which gets
# the smaller pair, so the larger is the safe side), else 2048 and 256.
LARGE_DEVICE_BYTES = 70 * GIB
# Routed experts (MoE) cost more than the workspace arithmetic above, measured on the one H200 log of a
# Qwen3-MoE model (tests/unit/fixtures/nvidia/h200/kv/dummy-qwen3-30b-a3b.log, vLLM 0.26):
# * vLLM ran it on its first-generation GPU model runner (gpu_model_runner.py, no "Using V2 Model Runner"
#   line), which profiles CUDA graph memory and subtracts its estimate from the KV budget ("Estimated CUDA
#   graph memory: 0.64 GiB total"; ``Worker.determine_available_memory`` in vllm/v1/worker/gpu_worker.py,
#   default since vLLM 0.21).  The runs on the V2 runner log no such estimate.  The planner cannot tell
#   which runner vLLM picks for an architecture, so every MoE model carries the allowance (the MLA MoE logs
#   ran on the V2 runner and stay within 3 % with it).
# * its peak activation was 2.68 GiB where forward + sampler above give 1.82: the fused-MoE workspace
#   (TritonExperts.workspace_shapes in vllm/model_executor/layers/fused_moe/fused_moe.py: (tokens x top_k,
#   max(2 x moe_intermediate, hidden)), (tokens x top_k, max(moe_intermediate, hidden)), (tokens, hidden) in
#   16 bit; the same 34,816 elements a token for this model) does not explain the other 0.87 GiB.  Until
#   more MoE logs say where it goes, the routed workspace is counted MOE_WORKSPACE_EXTRA more times (2 x
#   0.53 GiB here), scaling with the batch and the expert shape rather than a flat figure.
MOE_CUDA_GRAPH_BYTES = 0.64 * GIB
MOE_WORKSPACE_EXTRA = 2
BATCH_DEFAULTS = {"large": (8192, 1024), "small": (2048, 256)}

# The memory basis: the total the engine multiplies by gpu_memory_utilization, from the probed capacity (nvidia-smi's
# or npu-smi's).  Each device backend states its own (``memory_basis`` of backends/device.py and its subclasses):
# * ratio, reserved_mib: the engine's total is ``min(probed x ratio, probed - reserved_mib)``;
# * driver_reserved_fraction: a reservation the engine's total still contains and the plan counts in its margin;
# * safety_fraction: a share of the per-device budget kept back where the basis was not measured on a host of
#   this project, so that the plan never sets max_model_len to the exact limit it computed;
# * measured, source: how the basis was obtained, shown in the plan's numbers;
# * square_mask_bytes, square_mask_source: bytes the engine allocates per max_model_len squared besides the KV cache
#   (attention masks as wide as the context: 0 where the engine's masks have a fixed size), and where that is from.
# A caller without a backend (the tests of this module) gets the probed capacity with CUDA's reservation.
PROBED_BASIS: Dict[str, Any] = {
    "ratio": 1.0, "reserved_mib": 0.0, "driver_reserved_fraction": CUDA_RESERVED_FRACTION, "safety_fraction": 0.0,
    "measured": True, "source": "the probed capacity", "square_mask_bytes": 0, "square_mask_source": "",
}


def engine_memory_bytes(hw: Dict[str, Any]) -> float:
    """The device memory the engine budgets from (bytes): the probed capacity through the backend's memory basis."""
    probed = hw["device_memory_mib"] * MIB
    basis = hw.get("memory_basis") or PROBED_BASIS
    return max(0.0, min(probed * basis["ratio"], probed - basis["reserved_mib"] * MIB))


def overhead(model: Dict[str, Any], hw: Dict[str, Any], tp: int, pp: int, dp: int, utilization: float,
             requested: Optional[Dict[str, Any]] = None) -> Dict[str, float]:
    """The margin of one device by part (bytes): what vLLM takes from ``utilization x memory`` besides weights and KV."""
    requested = requested or {}
    memory = hw["device_memory_mib"] * MIB
    tokens, seqs = BATCH_DEFAULTS["large" if memory >= LARGE_DEVICE_BYTES else "small"]
    tokens = int(requested.get("max_num_batched_tokens") or tokens)
    seqs = int(requested.get("max_num_seqs") or seqs)
    basis = hw.get("memory_basis") or PROBED_BASIS
    parts = {
        "driver_reserved": utilization * basis["driver_reserved_fraction"] * memory,
        "basis_safety": utilization * basis["safety_fraction"] * engine_memory_bytes(hw),
        "non_torch": NON_TORCH_BYTES,
        "nccl": NCCL_BYTES_PER_GROUP * sum(1 for size in (tp, pp, dp) if size > 1),
    }
    if model.get("hidden"):
        forward = tokens * HIGH_PRECISION_BYTES * (model["mlp_width"] / tp + HIDDEN_BUFFERS * model["hidden"])
        sampler = min(seqs, tokens) * model["vocab"] * 4 * SAMPLER_COPIES
        parts["activation"] = forward + sampler
        if model.get("moe_workspace"):
            parts["moe_workspace"] = tokens * HIGH_PRECISION_BYTES * MOE_WORKSPACE_EXTRA * model["moe_workspace"] / tp
            parts["cuda_graphs"] = MOE_CUDA_GRAPH_BYTES
    else:
        # a declared size has no shape: the former flat rule, 5 % of the usable memory
        parts["activation"] = 0.05 * memory * utilization
    return parts


def evaluate(model: Dict[str, Any], hw: Dict[str, Any], fmt: str, tp: int, pp: int, dp: int, ep: bool,
             kv_bytes: float, need_len: int, sequences: int, utilization: float,
             requested: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """Memory of one layout on its tightest device (GPU/NPU backends).

    With pipeline stages every stage is sized on its own (its layers, its share of embedding and LM head, its
    KV per token); the stage that holds the fewest tokens decides, as vLLM sizes one KV cache for all.
    """
    available = engine_memory_bytes(hw) * utilization
    margin = sum(overhead(model, hw, tp, pp, dp, utilization, requested).values())
    tightest = None
    for stage in _stages(model, pp):
        weights = stage_weight_bytes(model, fmt, tp, dp, stage, pp)
        kv_token = (_stage_kv_bytes_per_token(model, kv_bytes, tp, stage["layers"])
                    if model["kv_per_token_elems"] is not None else None)
        budget = available - weights - margin
        room = budget / kv_token if kv_token else budget
        if tightest is None or room < tightest[0]:
            tightest = (room, weights, kv_token)
    dummy, weights, kv_token = tightest
    kv_budget = available - weights - margin
    square = (hw.get("memory_basis") or PROBED_BASIS)["square_mask_bytes"]
    kv_need = (kv_token * need_len * sequences + square * need_len ** 2) if kv_token else 0
    max_len = None
    if kv_token:
        max_len = _longest_context(max(kv_budget, 0), kv_token * sequences, square) // BLOCK * BLOCK
        if model["max_position_embeddings"]:
            max_len = min(max_len, model["max_position_embeddings"])
    return {
        "tp": tp, "pp": pp, "dp": dp, "ep": ep, "fmt": fmt,
        "available": available, "weights": weights, "margin": margin, "kv_budget": kv_budget,
        "kv_token": kv_token, "kv_need": kv_need, "need": weights + margin + kv_need,
        "max_len": max_len, "fits": kv_budget > 0 and kv_budget >= kv_need and (max_len is None or max_len > 0),
        "devices": tp * pp * dp,
    }


def _longest_context(budget: float, per_token: float, square: float) -> int:
    """The longest max_model_len whose KV cache (``per_token`` bytes a token) and attention masks (``square`` bytes
    per max_model_len squared) fit ``budget`` bytes: the positive root of ``square x L^2 + per_token x L = budget``."""
    if not square:
        return int(budget // per_token)
    return int((math.sqrt(per_token ** 2 + 4 * square * budget) - per_token) / (2 * square))


def _search(model: Dict[str, Any], hw: Dict[str, Any], fmt: str, max_devices: int, **kw: Any) -> Tuple[Optional[Dict[str, Any]], Dict[str, Any]]:
    """Smallest TP on one node, else the largest TP with pipeline stages; ``(fitting layout or None, best tried)``."""
    per_node = hw["devices_per_node"]
    sizes = valid_tensor_parallel(model, per_node)
    ep_for = kw.pop("ep_for")
    last = None
    for tp in sizes:
        last = evaluate(model, hw, fmt, tp, 1, 1, ep_for(tp, 1), **kw)
        if last["fits"]:
            return last, last
    tp = sizes[-1]
    # A model known only by its size (params_b) has no layer count: it is assumed to have at least as many
    # layers as the devices allow stages (every decoder vLLM serves has dozens), so pipeline stages reach
    # across every node; :data:`UNKNOWN_LAYERS_NOTE` says so in the plan.
    stages = model["layers"] or max(max_devices // tp, 1)
    for pp in range(2, stages + 1):
        if tp * pp > max_devices:
            break
        last = evaluate(model, hw, fmt, tp, pp, 1, ep_for(tp, 1, tp * pp > per_node), **kw)
        if last["fits"]:
            return last, last
    return None, last


UNKNOWN_LAYERS_NOTE = ("The model is known by params_b only: its layer count is assumed to allow {pp} pipeline stages "
                       "(one per node), with the weights split evenly between them; give config.json to plan it exactly.")


def _search_data_parallel(model: Dict[str, Any], hw: Dict[str, Any], fmt: str, replica_tensor_parallel: List[int],
                          **kw: Any) -> Optional[Dict[str, Any]]:
    """Data parallel replicas over every device of every node, each replica within one node (tensor parallel only).

    Tries the tensor-parallel sizes of one replica in ``replica_tensor_parallel``'s order (the backend's
    ``multinode_moe``); a size the model cannot take, that does not divide a node, or that leaves a single replica
    (no data parallelism: :func:`_search` plans that) is skipped.  With expert parallelism the routed experts are
    split over all ``tp x dp`` devices (:func:`per_device_weight_bytes`), so a replica fits in a fraction of the
    memory a whole copy of the model needs.
    """
    per_node, nodes = hw["devices_per_node"], hw["nodes"]
    ep_for = kw.pop("ep_for")
    sizes = valid_tensor_parallel(model, per_node)
    for tp in replica_tensor_parallel:
        if tp not in sizes or per_node % tp:
            continue
        dp = per_node // tp * nodes
        if dp == 1:
            continue
        layout = evaluate(model, hw, fmt, tp, 1, dp, ep_for(tp, dp), **kw)
        if layout["fits"]:
            return layout
    return None


def _replica_layout(model: Dict[str, Any], hw: Dict[str, Any], fmt: str, spread: Optional[Dict[str, Any]],
                    **kw: Any) -> Optional[Dict[str, Any]]:
    """The backend's data-parallel layout for a mixture-of-experts model, where its tutorials run one; else None.

    Over several nodes it is tried before one replica over the nodes.  On one host it is tried only when the host
    has at least ``single_node_min_devices`` devices and nothing smaller than the whole host holds the model as one
    tensor-parallel group (vllm-ascend runs DeepSeek-R1 W8A8 on one 16-NPU Atlas 800 A3 as data parallel 4 x tensor
    parallel 4, not tensor parallel 16); a model that fits fewer devices keeps the smallest tensor-parallel size.
    """
    if not (model["moe"] and spread):
        return None
    per_node = hw["devices_per_node"]
    if hw["nodes"] == 1:
        if per_node < spread["single_node_min_devices"]:
            return None
        alone, dummy = _search(model, hw, fmt, per_node, **kw)
        if alone and alone["devices"] < per_node:
            return None
    return _search_data_parallel(model, hw, fmt, spread["replica_tensor_parallel"], **kw)


# --- the plan ---------------------------------------------------------------------------------

def _nodes_for(devices: int, per_node: int) -> int:
    return max(1, math.ceil(devices / max(per_node, 1)))


def plan_accelerator(model: Dict[str, Any], hw: Dict[str, Any], requested: Dict[str, Any], options: Dict[str, Any]) -> Dict[str, Any]:
    """Fit and engine arguments for a GPU/NPU backend.  Raises :class:`PlanError` for impossible requests."""
    per_node, nodes = hw["devices_per_node"], hw["nodes"]
    total_devices = per_node * nodes
    fmt = model["weight_dtype"]
    utilization = float(requested.get("gpu_memory_utilization") or 0.9)
    kv_name, kv_bytes = kv_cache_bytes(requested)
    sequences = int(options.get("concurrent_sequences") or 1)
    max_pos = model["max_position_embeddings"]
    want_len = requested.get("max_model_len")
    if want_len is not None:
        want_len = int(want_len)
        if max_pos and want_len > max_pos:
            raise PlanError(f"max_model_len {want_len} exceeds the model's max_position_embeddings {max_pos}")
    need_len = want_len or min(max_pos or options["min_model_len"], options["min_model_len"])
    moe = model["moe"]
    ep_requested = requested.get("enable_expert_parallel")

    # A backend whose engine fails with expert parallelism through pipeline stages over nodes (Ray) gets those
    # layouts without it: the routed experts take the same bytes per device either way (per_device_weight_bytes).
    no_pipeline_ep = (options.get("multinode_moe") or {}).get("pipeline_expert_parallel") is False

    def ep_for(tp: int, dp: int, pipeline_over_nodes: bool = False) -> bool:
        if ep_requested is not None:
            return bool(ep_requested and moe)
        return bool(moe and tp * dp > 1 and not (no_pipeline_ep and pipeline_over_nodes))

    kw = dict(kv_bytes=kv_bytes, need_len=need_len, sequences=sequences, utilization=utilization, requested=requested)
    fixed = any(requested.get(k) for k in ("tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size"))
    if fixed:
        tp = int(requested.get("tensor_parallel_size") or 1)
        pp = int(requested.get("pipeline_parallel_size") or 1)
        dp = int(requested.get("data_parallel_size") or 1)
        problem = tensor_parallel_problem(model, tp)
        if problem:
            raise PlanError(f"{problem}; use one of {', '.join(map(str, valid_tensor_parallel(model, per_node) or [1]))}")
        if tp > total_devices:
            raise PlanError(f"tensor_parallel_size {tp} exceeds the {total_devices} devices ({nodes} node(s) x {per_node})")
        if tp > per_node and tp % per_node:
            raise PlanError(f"tensor_parallel_size {tp} spans nodes but is not a multiple of the {per_node} devices per node")
        if model["layers"] and pp > model["layers"]:
            raise PlanError(f"pipeline_parallel_size {pp} exceeds the model's {model['layers']} layers")
        if tp * pp * dp > total_devices:
            raise PlanError(f"tensor {tp} x pipeline {pp} x data {dp} parallel needs {tp * pp * dp} devices, "
                            f"{total_devices} available ({nodes} node(s) x {per_node})")
        layout = evaluate(model, hw, fmt, tp, pp, dp, ep_for(tp, dp, pp > 1 and tp * pp > per_node), **kw)
        found = layout if layout["fits"] else None
    else:
        found = _replica_layout(model, hw, fmt, options.get("multinode_moe"), ep_for=ep_for, **kw)
        if found:
            layout = found
        else:
            found, layout = _search(model, hw, fmt, total_devices, ep_for=ep_for, **kw)
            layout = found or layout

    result = _summary(model, layout, hw, kv_bytes, need_len, want_len)
    args: Dict[str, Any] = {
        "tensor_parallel_size": layout["tp"],
        "pipeline_parallel_size": layout["pp"],
        "gpu_memory_utilization": utilization,
    }
    if layout["dp"] > 1:
        args["data_parallel_size"] = layout["dp"]
    if layout["max_len"]:
        args["max_model_len"] = want_len if (want_len and found) else layout["max_len"]
    if moe:
        args["enable_expert_parallel"] = layout["ep"]
    if kv_name != "auto":
        args["kv_cache_dtype"] = kv_name
    result["engine_args"] = args
    result["fits"] = found is not None
    result["nodes_needed"] = _nodes_for(layout["devices"], per_node)
    if found is None:
        result["fixes"] = _fixes(model, hw, layout, want_len, kw, ep_for, options)
    return result


def _summary(model: Dict[str, Any], layout: Dict[str, Any], hw: Dict[str, Any], kv_bytes: float, need_len: int,
             want_len: Optional[int]) -> Dict[str, Any]:
    kv_token = kv_bytes_per_token(model, kv_bytes)
    return {
        "numbers": {
            "params_b": round(model["params"]["total"] / 1e9, 2),
            "active_params_b": round(model["params"]["active"] / 1e9, 2),
            "mtp_params_b": round(model["params"]["mtp"] / 1e9, 2),
            "weight_dtype": layout["fmt"],
            "weights_gib": _gib(weight_bytes(model, layout["fmt"])),
            "kv_bytes_per_token": kv_token,
            "kv_bytes_per_token_per_device": int(layout["kv_token"]) if layout["kv_token"] else None,
            "per_device_weights_gib": _gib(layout["weights"]),
            "margin_gib": _gib(layout["margin"]),
            "kv_budget_gib": _gib(max(layout["kv_budget"], 0)),
            "kv_need_gib": _gib(layout["kv_need"]),
            "per_device_need_gib": _gib(layout["need"]),
            "available_gib": _gib(layout["available"]),
            "device_memory_gib": round(hw["device_memory_mib"] / 1024, 2),
            "memory_basis_gib": _gib(engine_memory_bytes(hw)),
            "memory_basis": memory_basis_reason(hw),
            "devices_used": layout["devices"],
            "checked_model_len": need_len,
            "max_model_len_limit": layout["max_len"],
        },
    }


def memory_basis_reason(hw: Dict[str, Any]) -> str:
    """What the plan took as the engine's device total, how that was obtained, and the margin kept for it."""
    basis = hw.get("memory_basis") or PROBED_BASIS
    text = f"{_gib(engine_memory_bytes(hw))} GiB of {round(hw['device_memory_mib'] / 1024, 2)} GiB probed: {basis['source']}"
    if basis["driver_reserved_fraction"]:
        text += f"; the driver's reservation ({basis['driver_reserved_fraction']:.2%}) is counted in the margin"
    if not basis["measured"]:
        text += f"; not measured here, so {basis['safety_fraction']:.0%} of the per-device budget is kept back"
    if basis["square_mask_bytes"]:
        text += (f"; {basis['square_mask_bytes']} bytes per max_model_len squared for attention masks are counted with "
                 f"the KV cache ({basis['square_mask_source']})")
    return text


# The most accelerators one host carries (Atlas 800I A3: 16 chips); "more devices" fixes stay within one host.
MAX_DEVICES_PER_HOST = 16


def _larger_devices(model: Dict[str, Any], hw: Dict[str, Any], fmt: str, kw: Dict[str, Any], ep_for: Any) -> Optional[Dict[str, Any]]:
    """The device memory that would hold the model at the largest tensor-parallel size of this host.

    The smallest whole GiB at which :func:`evaluate` finds the weights, the margin (which grows with the
    device: the driver's reservation, vLLM's batch defaults) and the KV cache fit.
    """
    sizes = valid_tensor_parallel(model, hw["devices_per_node"])
    tp = sizes[-1]
    layout = evaluate(model, hw, fmt, tp, 1, 1, ep_for(tp, 1), **kw)
    gib = max(1, math.ceil((layout["weights"] + layout["kv_need"]) / kw["utilization"] / GIB))
    while True:
        trial = evaluate(model, dict(hw, device_memory_mib=gib * 1024), fmt, tp, 1, 1, ep_for(tp, 1), **kw)
        if trial["kv_budget"] > 0 and trial["kv_budget"] >= trial["kv_need"]:
            return {"tp": tp, "gib": gib}
        gib += 1


def _layout_text(model: Dict[str, Any], layout: Dict[str, Any]) -> str:
    """``tensor_parallel_size 8, pipeline_parallel_size 2`` and, for a mixture-of-experts layout whose expert
    parallelism the backend turns off, ``without expert parallelism``."""
    text = f"tensor_parallel_size {layout['tp']}"
    if layout["dp"] > 1:
        text = f"data_parallel_size {layout['dp']}, " + text
    if layout["pp"] > 1:
        text += f", pipeline_parallel_size {layout['pp']}"
    if model["moe"] and layout["dp"] > 1 and layout["ep"]:
        text += " with expert parallelism"
    elif model["moe"] and layout["tp"] * layout["pp"] * layout["dp"] > 1 and not layout["ep"]:
        text += " without expert parallelism"
    return text


def _fixes(model: Dict[str, Any], hw: Dict[str, Any], layout: Dict[str, Any], want_len: Optional[int],
           kw: Dict[str, Any], ep_for: Any, options: Dict[str, Any]) -> List[str]:
    """Cheapest first: a shorter context, smaller weights, larger devices, more devices in one host.

    Every fix keeps the number of nodes: "more devices" means a larger host (a group of hosts is planned with
    ``nodes`` and kunpeng.vllm.vllm_cluster).
    """
    fixes: List[str] = []
    per_node, nodes = hw["devices_per_node"], hw["nodes"]
    if layout["kv_budget"] > 0 and layout["max_len"] and layout["max_len"] >= BLOCK:
        fixes.append(f"a shorter context: max_model_len {layout['max_len']} fits at {_layout_text(model, layout)}")
    current = WEIGHT_FORMATS[layout["fmt"]]
    for fmt in options.get("smaller_formats", []):
        if WEIGHT_FORMATS[fmt] >= current:
            continue
        # the planner's own layout for a mixture-of-experts model on this backend, as it would plan it
        found = _replica_layout(model, hw, fmt, options.get("multinode_moe"), ep_for=ep_for, **kw)
        if not found:
            found, dummy = _search(model, hw, fmt, per_node * nodes, ep_for=ep_for, **kw)
        if found:
            fixes.append(f"quantised weights: {fmt} ({_gib(weight_bytes(model, fmt))} GiB) fit at {_layout_text(model, found)}")
            break
    larger = _larger_devices(model, hw, layout["fmt"], kw, ep_for)
    if larger["gib"] * GIB > hw["device_memory_mib"] * MIB:
        fixes.append(f"larger devices: {per_node} with at least {larger['gib']} GiB each (tensor_parallel_size {larger['tp']})")
    count = per_node * 2
    while count <= MAX_DEVICES_PER_HOST:
        found, dummy = _search(model, dict(hw, devices_per_node=count, nodes=1), layout["fmt"], count, ep_for=ep_for, **kw)
        if found:
            pp = f", pipeline_parallel_size {found['pp']}" if found["pp"] > 1 else ""
            fixes.append(f"more devices: a host with {count} such devices (tensor_parallel_size {found['tp']}{pp})")
            break
        count *= 2
    return fixes


def plan_cpu(model: Dict[str, Any], hw: Dict[str, Any], requested: Dict[str, Any], options: Dict[str, Any]) -> Dict[str, Any]:
    """Fit on the CPU backend: host RAM holds the weights, the fixed KV space and the runtime."""
    host = hw["host_memory_mib"] * MIB
    kv_space = float(options.get("kv_cache_space_gib") or 4) * GIB
    kv_name, kv_bytes = kv_cache_bytes(requested)
    fmt = served_weight_format(model, requested)
    weights = weight_bytes(model, fmt)
    margin = max(3 * GIB, 0.10 * host)
    kv_token = kv_bytes_per_token(model, kv_bytes)
    sequences = int(options.get("concurrent_sequences") or 1)
    max_pos = model["max_position_embeddings"]
    want_len = requested.get("max_model_len")
    need_len = int(want_len) if want_len else min(max_pos or options["min_model_len"], options["min_model_len"])
    max_len = None
    if kv_token:
        max_len = int(kv_space // (kv_token * sequences)) // BLOCK * BLOCK
        if max_pos:
            max_len = min(max_len, max_pos)
    tp = int(requested.get("tensor_parallel_size") or 1)
    if tp != 1:
        raise PlanError("the CPU backend runs tensor_parallel_size 1 per node; scale out with data parallel nodes")
    need = weights + kv_space + margin
    fits = need <= host and (max_len is None or max_len >= need_len)
    args: Dict[str, Any] = {"tensor_parallel_size": 1, "pipeline_parallel_size": 1}
    if max_len:
        args["max_model_len"] = int(want_len) if (want_len and fits) else max_len
    if kv_name != "auto":
        args["kv_cache_dtype"] = kv_name
    fixes = []
    if not fits:
        if need > host:
            fixes.append(f"a host with at least {math.ceil(need / GIB)} GiB of memory, or a smaller kv_cache_space_gib")
        if max_len is not None and max_len < need_len:
            fixes.append(f"a shorter context (max_model_len {max_len}) or kv_cache_space_gib "
                         f"{math.ceil(kv_token * need_len * sequences / GIB)}")
    return {
        "numbers": {
            "params_b": round(model["params"]["total"] / 1e9, 3),
            "active_params_b": round(model["params"]["active"] / 1e9, 3),
            "mtp_params_b": round(model["params"]["mtp"] / 1e9, 2),
            "weight_dtype": fmt,
            "weights_gib": _gib(weights),
            "kv_bytes_per_token": kv_token,
            "kv_bytes_per_token_per_device": kv_token,
            "per_device_weights_gib": _gib(weights),
            "margin_gib": _gib(margin),
            "kv_budget_gib": _gib(kv_space),
            "kv_need_gib": _gib(kv_token * need_len * sequences) if kv_token else 0,
            "per_device_need_gib": _gib(need),
            "available_gib": _gib(host),
            "devices_used": 1,
            "checked_model_len": need_len,
            "max_model_len_limit": max_len,
            "kv_cache_space_gib": _gib(kv_space),
        },
        "engine_args": args,
        "fits": fits,
        "nodes_needed": 1,
        "fixes": fixes,
    }


def misfit_message(model: Dict[str, Any], result: Dict[str, Any], hw: Dict[str, Any], on_host: bool) -> str:
    """Why the model does not fit: in the host's memory (``on_host``, :func:`plan_cpu`) or the devices'."""
    n = result["numbers"]
    args = result["engine_args"]
    if on_host:
        where = f"this host ({n['available_gib']} GiB memory, KV space {n['kv_budget_gib']} GiB)"
        need = (f"needs {n['per_device_need_gib']} GiB (weights {n['weights_gib']} + KV space {n['kv_budget_gib']} + "
                f"runtime margin {n['margin_gib']}) and KV for {n['checked_model_len']} tokens ({n['kv_need_gib']} GiB)")
    else:
        where = (f"{hw['nodes']} node(s) x {hw['devices_per_node']} x {n['device_memory_gib']} GiB "
                 f"(gpu_memory_utilization {args.get('gpu_memory_utilization')}: {n['available_gib']} GiB per device)")
        need = (f"at tensor_parallel_size {args['tensor_parallel_size']}, pipeline_parallel_size {args['pipeline_parallel_size']} "
                f"each device needs {n['per_device_need_gib']} GiB (weights {n['per_device_weights_gib']} + margin "
                f"{n['margin_gib']} + KV for {n['checked_model_len']} tokens {n['kv_need_gib']}), {n['available_gib']} GiB available")
    msg = (f"{model['name']} ({n['params_b']}B params, {n['weight_dtype']} weights {n['weights_gib']} GiB) does not fit "
           f"{where}: {need}.")
    fixes = result.get("fixes") or []
    if fixes:
        msg += " Cheapest fix: " + fixes[0] + "."
        if len(fixes) > 1:
            msg += " Otherwise: " + "; ".join(fixes[1:]) + "."
    return msg
