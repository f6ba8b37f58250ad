"""The planner and the role's engine config in rehearsal mode (load_format dummy, no weights), through the real module.

The case the H200 runs: a directory holding only DeepSeek-V2-Lite's config.json, served by the role's
launcher.  kunpeng.vllm.install_state lists the directory (as the role's preflight does), kunpeng.vllm.vllm_plan
plans it on the H200's probe facts, and the engine config the role writes must carry load-format dummy and
skip-tokenizer-init; without load_format dummy the plan refuses, before any change, naming the fix.
"""

import json
import os
import shutil

import pytest
from conftest import FIXTURES
from module_runner import run_main

from ansible_collections.kunpeng.vllm.plugins.filter.vllm_engine_config import vllm_engine_config
from ansible_collections.kunpeng.vllm.plugins.module_utils import fact_contract
from ansible_collections.kunpeng.vllm.plugins.modules import install_state, vllm_plan

MODEL = os.path.join(FIXTURES, "models", "deepseek-v2-lite.json")
H200_FACTS = os.path.join(FIXTURES, "nvidia", "h200", "expected.json")


def _json(path):
    with open(path) as handle:
        return json.load(handle)


@pytest.fixture
def config_only(tmp_path):
    """A model directory holding only config.json, listed by the real install_state module."""
    model_dir = tmp_path / "deepseek-v2-lite"
    model_dir.mkdir()
    shutil.copy(MODEL, model_dir / "config.json")
    return model_dir


def listing(model_dir):
    failed, result = run_main(install_state.main, {"source": {"path": str(model_dir)}})
    assert not failed, result
    return result["files"]


def plan(model_dir, engine_args, tmp_path, **request):
    return run_main(vllm_plan.main, {
        "accelerators": _json(H200_FACTS), "vllm_version": "0.26.0", "python_version": "3.12",
        "model_name": "deepseek-v2-lite", "model_config": _json(os.path.join(model_dir, "config.json")),
        "model_files": listing(model_dir), "requested_engine_args": engine_args,
        "request": dict({"install_dir": str(tmp_path / "opt"), "architecture": "x86_64", "model_dir": str(model_dir),
                         "model_source": "local", "service_manager": "none", "host": "127.0.0.1", "port": 8002},
                        **request)})


def test_config_only_directory_rehearses(config_only, tmp_path):
    failed, result = plan(config_only, {"load_format": "dummy"}, tmp_path)
    assert not failed, result.get("msg")
    assert result["rehearsal"] == {
        "enabled": True, "weights": False, "tokenizer": False, "skip_tokenizer_init": True,
        "prompt_token_ids": [1, 2, 3, 4, 5, 6, 7, 8], "reason": result["rehearsal"]["reason"]}
    assert "not real" in result["rehearsal"]["reason"]
    assert any(note.startswith("Rehearsal without weights") for note in result["notes"])
    # sized from config.json as for real weights: dummy weights take the same memory
    assert result["fits"] is True
    assert 27 <= result["numbers"]["weights_gib"] <= 32, result["numbers"]
    # what the launcher's vllm serve --config gets
    config = vllm_engine_config(result["engine_config"], result["release"])
    assert config["load-format"] == "dummy"
    assert config["skip-tokenizer-init"] is True
    assert config["served-model-name"] == "deepseek-v2-lite"
    # the fact keeps to its declared contract
    assert fact_contract.check("kunpeng_vllm_plan", result["ansible_facts"]["kunpeng_vllm_plan"]) == []


def test_tokenizer_files_keep_the_tokenizer(config_only, tmp_path):
    (config_only / "tokenizer.json").write_text("{}")
    failed, result = plan(config_only, {"load-format": "dummy"}, tmp_path)
    assert not failed, result.get("msg")
    assert result["rehearsal"]["skip_tokenizer_init"] is False
    assert result["rehearsal"]["prompt_token_ids"] is None
    assert "skip-tokenizer-init" not in result["engine_config"]


@pytest.mark.parametrize("engine_args", [{}, {"load_format": "auto"}])
def test_weightless_directory_without_dummy_is_refused(config_only, tmp_path, engine_args):
    failed, result = plan(config_only, engine_args, tmp_path)
    assert failed
    assert "holds no model weights" in result["msg"]
    assert "vllm_engine_args.load_format: dummy" in result["msg"]


def test_real_weights_are_not_a_rehearsal(config_only, tmp_path):
    (config_only / "model-00001-of-00004.safetensors").write_bytes(b"\0" * 16)
    (config_only / "tokenizer.json").write_text("{}")
    failed, result = plan(config_only, {}, tmp_path)
    assert not failed, result.get("msg")
    assert result["rehearsal"]["enabled"] is False
    assert "load-format" not in result["engine_config"]
    assert "skip-tokenizer-init" not in result["engine_config"]
