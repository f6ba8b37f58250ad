# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""Is this deployment a rehearsal, and what does the engine need for it?

A rehearsal runs the whole role (install, plan, unit or launcher, readiness
gate) against a model directory that holds only ``config.json`` (and the
tokenizer files when they are at hand): vLLM's ``load_format: dummy`` builds
the model from its config and fills it with random weights, so the memory
footprint, the KV cache and the kernels are the real model's while the
answers are noise.  This module is the one place that decides:

* whether the request is a rehearsal (``vllm_engine_args.load_format: dummy``);
* whether a directory without weights is refused (it is, unless it is a
  rehearsal: vLLM would fail after minutes of start-up with "Cannot find any
  model weights");
* whether the engine must skip the tokenizer (``skip_tokenizer_init``): vLLM
  cannot start on a directory without tokenizer files otherwise, and then the
  server cannot tokenize, so the readiness check sends token ids.

The listing of the model directory is known when the role can read it before
anything changes (a controller copy, a directory already on the node); a
model downloaded from a hub is listed as None and only the request counts.
"""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

from typing import Any, Dict, Iterable, Optional

from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.capacity import PlanError

# The load format that fills the model with random weights instead of reading any
# (vllm/model_executor/model_loader/dummy_loader.py, DummyModelLoader; "dummy" in LoadConfig.load_format).
DUMMY = "dummy"

# Files vLLM's loaders read weights from: the default loader globs *.safetensors and *.bin (load format
# auto/hf), *.pt (pt and the .pt fall-back), *.bin (npcache)
# (vllm/model_executor/model_loader/default_loader.py, DefaultModelLoader._prepare_weights); the GGUF loader
# reads a *.gguf file (vllm/model_executor/model_loader/gguf_loader.py).
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".gguf")

# Files a Hugging Face tokenizer is built from (transformers' tokenizer classes: VOCAB_FILES_NAMES of the
# fast tokenizer (tokenizer.json), SentencePiece (tokenizer.model, spiece.model), BPE (vocab.json with
# merges.txt), WordPiece (vocab.txt), Mistral's tekken.json, tiktoken files).  tokenizer_config.json alone
# builds none.
TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "spiece.model", "vocab.json", "vocab.txt", "tekken.json")
TOKENIZER_SUFFIXES = (".tiktoken",)

# The prompt of the readiness check when the server cannot tokenize: token ids below any real vocabulary's
# size.  vLLM's completions API takes a list of token ids as ``prompt``
# (vllm/entrypoints/openai/completion/protocol.py, CompletionRequest.prompt).
PROMPT_TOKEN_IDS = [1, 2, 3, 4, 5, 6, 7, 8]

FIX = ("set vllm_engine_args.load_format: dummy to rehearse with random weights (the answers are not real), "
       "or point vllm_model_src at a directory that holds the weights")


def _names(files: Iterable[str]):
    return [str(path).replace("\\", "/").rsplit("/", 1)[-1] for path in files]


def has_weights(files: Iterable[str]) -> bool:
    """Does the listing hold a file vLLM's loaders read weights from?"""
    return any(name.endswith(WEIGHT_SUFFIXES) for name in _names(files))


def has_tokenizer(files: Iterable[str]) -> bool:
    """Does the listing hold a file a tokenizer is built from?"""
    return any(name in TOKENIZER_FILES or name.endswith(TOKENIZER_SUFFIXES) for name in _names(files))


def rehearsal(engine_args: Optional[Dict[str, Any]], files: Optional[Iterable[str]] = None,
              where: str = "the model directory") -> Dict[str, Any]:
    """The rehearsal decision for the requested engine options and the model directory's listing.

    ``engine_args``: ``vllm_engine_args`` (dashed or underscore names).  ``files``: the relative paths in
    the model directory, or None when they cannot be listed before the change (a hub download).
    Returns ``enabled`` (load_format dummy), ``weights`` / ``tokenizer`` (None when not listed),
    ``skip_tokenizer_init`` (what the engine gets), ``prompt_token_ids`` (the readiness check's prompt when
    the server cannot tokenize, else None) and ``reason``.  Raises PlanError, naming the variable and the
    fix, for a listed directory without weights outside a rehearsal.
    """
    args = {str(key).replace("-", "_"): value for key, value in (engine_args or {}).items()}
    enabled = str(args.get("load_format") or "").strip().lower() == DUMMY
    listing = None if files is None else list(files)
    weights = None if listing is None else has_weights(listing)
    tokenizer = None if listing is None else has_tokenizer(listing)
    if weights is False and not enabled:
        raise PlanError(f"{where} holds no model weights (no {', '.join('*' + s for s in WEIGHT_SUFFIXES)} file) "
                        f"and vllm_engine_args.load_format is {args.get('load_format') or 'not set'}: {FIX}")
    requested_skip = args.get("skip_tokenizer_init")
    if requested_skip is not None:
        skip, why = bool(requested_skip), "vllm_engine_args.skip_tokenizer_init is set"
    elif enabled and tokenizer is False and not args.get("tokenizer"):
        skip, why = True, "no tokenizer files: the engine skips the tokenizer and the readiness check sends token ids"
    else:
        skip, why = False, ""
    if not enabled:
        reason = "not a rehearsal: load_format is not dummy"
    else:
        unread = " (the directory's own weights are not read)" if weights else ""
        skipped = f"; {why}" if why else ""
        reason = f"rehearsal: load_format dummy fills the model with random weights; the answers are not real{unread}{skipped}"
    return {
        "enabled": enabled,
        "weights": weights,
        "tokenizer": tokenizer,
        "skip_tokenizer_init": skip,
        "prompt_token_ids": list(PROMPT_TOKEN_IDS) if skip else None,
        "reason": reason,
    }
