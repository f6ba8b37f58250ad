"""Write a synthetic word-level tokenizer beside a config.json (benchmark aid, not a test).

A rehearsal serves random weights (``load_format: dummy``) from a directory
that holds only the model's config.json.  vLLM can serve that without a
tokenizer (``skip_tokenizer_init``), but ``vllm bench serve`` and the
chat-completions endpoint need one.  This writes the smallest tokenizer that
covers the model's whole vocabulary: token ``i`` is the word ``w<i>``, words
split on white space, the config's BOS/EOS ids are special tokens, and the
chat template joins the messages' contents.  Every id the model can sample
decodes, and a decoded prompt encodes back to the same ids, so the
benchmark's random prompts have exactly the lengths it asks for.

    python3 word_tokenizer.py MODEL_DIR      # reads MODEL_DIR/config.json

Written: MODEL_DIR/tokenizer.json (the Hugging Face ``tokenizers`` format,
WordLevel model, WhitespaceSplit pre-tokenizer) and tokenizer_config.json.
"""

import json
import os
import sys

UNK = "<unk>"


def _special(token_id, content):
    return {"id": token_id, "content": content, "single_word": False, "lstrip": False, "rstrip": False,
            "normalized": False, "special": True}


def tokenizer_files(config):
    """(tokenizer.json, tokenizer_config.json) as dicts for a model config."""
    size = int(config["vocab_size"])
    bos, eos = config.get("bos_token_id"), config.get("eos_token_id")
    eos = eos[0] if isinstance(eos, list) else eos
    names = {0: UNK}
    if bos is not None:
        names[int(bos)] = "<bos>"
    if eos is not None:
        names[int(eos)] = "<eos>"
    vocab = {names.get(i, f"w{i}"): i for i in range(size)}
    tokenizer = {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [_special(i, name) for i, name in sorted(names.items())],
        "normalizer": None, "pre_tokenizer": {"type": "WhitespaceSplit"}, "post_processor": None,
        "decoder": None, "model": {"type": "WordLevel", "vocab": vocab, "unk_token": UNK},
    }
    tokenizer_config = {
        "tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": int(config.get("max_position_embeddings", 4096)),
        "unk_token": UNK, "bos_token": names.get(bos) if bos is not None else None,
        "eos_token": names.get(eos) if eos is not None else None, "add_bos_token": False, "add_eos_token": False,
        "chat_template": "{% for message in messages %}{{ message['content'] }} {% endfor %}",
    }
    return tokenizer, tokenizer_config


def main(model_dir):
    with open(os.path.join(model_dir, "config.json")) as handle:
        tokenizer, tokenizer_config = tokenizer_files(json.load(handle))
    for name, data in (("tokenizer.json", tokenizer), ("tokenizer_config.json", tokenizer_config)):
        with open(os.path.join(model_dir, name), "w") as handle:
            json.dump(data, handle)
    print(f"{model_dir}: word-level tokenizer of {len(tokenizer['model']['vocab'])} tokens")


if __name__ == "__main__":
    main(sys.argv[1])
