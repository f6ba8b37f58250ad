"""One greedy run of SmolLM2 for the CPU dtype comparison (run inside the engine image).

Usage: python cpu_dtype_greedy.py MODEL_DIR ENGINE DTYPE
  ENGINE: vllm or transformers; DTYPE: bfloat16 or float32.
Prints one JSON line: the prompt's token ids (the chat template applied to the
readiness prompt, as vLLM's chat endpoint does), the generated token ids and
their text, all at temperature 0 (greedy).
"""
import json
import sys

PROMPT = "What is the capital of France?"
MAX_TOKENS = 16


def prompt_ids(tokenizer):
    messages = [{"role": "user", "content": PROMPT}]
    ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
    if isinstance(ids, dict) or hasattr(ids, "keys"):
        ids = ids["input_ids"]
    return [int(i) for i in ids]


def run_transformers(model_dir, dtype, ids):
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=getattr(torch, dtype))
    out = model.generate(torch.tensor([ids]), max_new_tokens=MAX_TOKENS, do_sample=False,
                         temperature=None, top_p=None, top_k=None)
    return [int(t) for t in out[0][len(ids):]]


def run_vllm(model_dir, dtype, ids):
    from vllm import LLM, SamplingParams
    from vllm.inputs import TokensPrompt

    llm = LLM(model=model_dir, dtype=dtype, enforce_eager=True, max_model_len=2048, max_num_seqs=1)
    outs = llm.generate([TokensPrompt(prompt_token_ids=ids)],
                        SamplingParams(temperature=0, max_tokens=MAX_TOKENS))
    return [int(t) for t in outs[0].outputs[0].token_ids]


def main():
    model_dir, engine, dtype = sys.argv[1:4]
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    ids = prompt_ids(tokenizer)
    generated = (run_vllm if engine == "vllm" else run_transformers)(model_dir, dtype, ids)
    print(json.dumps({"engine": engine, "dtype": dtype, "prompt": PROMPT, "prompt_token_ids": ids,
                      "token_ids": generated, "text": tokenizer.decode(generated, skip_special_tokens=True)}),
          flush=True)


if __name__ == "__main__":
    main()
