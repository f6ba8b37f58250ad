"""The diagnosis classifier (module_utils/verify/diagnosis.py) over real failure logs.

Every ``*.log`` under tests/unit/fixtures/diagnose/ quotes an upstream issue (its header names it);
the healthy rows are this repository's own H200 captures.  The Ascend rows replay vllm-ascend users'
logs: no NPU is reachable from CI.
"""

import os

import pytest

from ansible_collections.kunpeng.vllm.plugins.module_utils.verify import diagnosis
from conftest import FIXTURES


def log(name):
    """The fixture's lines without its ``# source:`` header."""
    with open(os.path.join(FIXTURES, "diagnose", name), encoding="utf-8") as handle:
        return [line.rstrip("\n") for line in handle if not line.startswith("# ")]


def capture(*parts):
    with open(os.path.join(FIXTURES, *parts), encoding="utf-8") as handle:
        return handle.read().splitlines()


# (row id, evidence, first finding's id, its variable, its value)
ROWS = [
    ("kv-estimate", {"log": log("kv-cache-estimate.log")}, "kv_cache_too_small", "vllm_engine_args.max_model_len", 34736),
    ("kv-estimate-plan-lower", {"log": log("kv-cache-estimate.log"), "plan": {"max_model_len_limit": 30010}},
     "kv_cache_too_small", "vllm_engine_args.max_model_len", 30000),
    ("kv-no-estimate-plan", {"log": log("kv-cache-no-estimate.log"), "plan": {"max_model_len_limit": 163840}},
     "kv_cache_too_small", "vllm_engine_args.max_model_len", 163840),
    ("kv-no-estimate-no-plan", {"log": log("kv-cache-no-estimate.log")}, "kv_cache_too_small", "vllm_engine_args.max_model_len", None),
    ("kv-cpu", {"log": log("kv-cache-cpu.log")}, "kv_cache_too_small", "vllm_engine_args.max_model_len", 23168),
    ("kv-cpu-plan-lower", {"log": log("kv-cache-cpu.log"), "plan": {"max_model_len_limit": 8192}},
     "kv_cache_too_small", "vllm_engine_args.max_model_len", 8192),
    ("kv-v0", {"log": log("kv-cache-v0.log")}, "kv_cache_too_small", "vllm_engine_args.max_model_len", 3664),
    ("max-model-len-derived", {"log": log("max-model-len-derived.log")}, "max_model_len_beyond_model",
     "vllm_engine_args.max_model_len", 8192),
    ("oom-weights", {"log": log("oom-loading-weights.log")}, "oom_loading_weights", "vllm_engine_args.tensor_parallel_size", None),
    ("no-kernel-image", {"log": log("no-kernel-image.log")}, "no_kernel_image", "vllm_version", None),
    ("driver-too-old", {"log": log("driver-too-old.log")}, "driver_too_old", "nvidia_driver_branch", None),
    ("npu-occupied", {"log": log("npu-dcmi-occupied.log")}, "npu_not_accessible", "vllm_visible_devices", None),
    ("npu-no-device-type", {"log": log("npu-infer-device.log")}, "npu_not_accessible", "vllm_visible_devices", None),
    ("npu-nodes-missing", {"devices": {"missing": ["/dev/davinci0", "/dev/davinci_manager"]}},
     "npu_not_accessible", "vllm_visible_devices", None),
    ("cann-hal", {"log": log("cann-env-hal.log")}, "cann_env_missing", "ascend_env_file", None),
    ("cann-atb", {"log": log("cann-env-atb.log")}, "cann_env_missing", "ascend_env_file", None),
    ("hccl-port", {"log": log("hccl-port-clash.log")}, "hccl_port_clash", "vllm_environment", None),
    ("hccl-timeout", {"log": log("hccl-timeout.log")}, "hccl_timeout", "vllm_environment", None),
    ("ray-socket", {"log": log("ray-socket-path.log")}, "ray_socket_path_too_long", "vllm_environment", None),
    ("ray-head", {"log": log("ray-head-unreachable.log")}, "ray_head_unreachable", "vllm_cluster_network", None),
    ("ray-token", {"log": log("ray-token-refused.log")}, "ray_token_refused", "vllm_config_dir", None),
    ("ray-token-mode-off", {"log": log("ray-token-mode-off.log")}, "ray_token_refused", "vllm_config_dir", None),
    ("port-log", {"log": log("port-in-use.log"), "port": 8000}, "port_in_use", "vllm_port", None),
    ("port-listener", {"port": 8000, "listeners": [{"port": 8000, "process": "python3"}, {"port": 22, "process": "sshd"}]},
     "port_in_use", "vllm_port", None),
    ("tokenizer", {"log": log("tokenizer-missing.log")}, "model_dir_incomplete", "vllm_model_src", None),
    ("model-dir-empty", {"model_dir": {"path": "/var/lib/vllm/models/smollm2", "missing": ["config.json", "weights (*.safetensors or *.bin)"]}},
     "model_dir_incomplete", "vllm_model_src", None),
    ("api-401", {"api": {"models": {"status": 401, "body": '{"error":"Unauthorized"}'}}}, "api_key_mismatch", "vllm_api_key", None),
    ("answer", {"api": {"models": {"status": 200}, "answer": capture("nvidia", "h200", "bench", "default-ready.log")[1].split('"')[3],
                        "expect": "Berlin"}}, "answer_check_failed", "vllm_ready_expect", None),
    ("disk-log", {"log": log("disk-full.log")}, "disk_full", "vllm_model_dir", None),
    ("disk-df", {"disks": [{"mount": "/var/lib/vllm", "use_percent": 100}, {"mount": "/", "use_percent": 40}]},
     "disk_full", "vllm_model_dir", None),
    ("oom-killer", {"kernel": log("oom-killer.kernel.log")}, "oom_killer", "vllm_cpu_kvcache_space_gib", None),
    ("xid-79", {"kernel": log("xid-79.kernel.log")}, "nvidia_xid", "vllm_visible_devices", None),
    ("api-silent", {"api": {"health": {"status": None, "body": "cannot connect: [Errno 111] Connection refused"}}},
     "api_not_answering", "vllm_instance_name", None),
]


@pytest.mark.parametrize("evidence, first, variable, value", [row[1:] for row in ROWS], ids=[row[0] for row in ROWS])
def test_signature(evidence, first, variable, value):
    found = diagnosis.diagnose(evidence)
    assert found, "no finding"
    head = found[0]
    assert (head["id"], head["variable"], head["value"]) == (first, variable, value)
    assert head["evidence"] and head["cause"] and variable in head["fix"]


HEALTHY = [
    ("h200-smollm2", {"log": capture("nvidia", "h200", "bench", "default-serve.log")}),
    ("h200-deepseek-v2", {"log": capture("nvidia", "h200", "deepseek-bench", "serve-dsv2-bf16.log")}),
    ("h200-deepseek-kvfp8", {"log": capture("nvidia", "h200", "deepseek-bench", "default-serve-dsv2-kvfp8.log")}),
    ("answer-matches", {"api": {"health": {"status": 200}, "models": {"status": 200},
                                "answer": "The capital of France is Paris.", "expect": "Paris"}}),
    ("own-port", {"port": 8000, "listeners": [{"port": 8000, "process": "vllm"}]}),
    ("disk-ok", {"disks": [{"mount": "/", "use_percent": 61}]}),
    ("nothing", {}),
]


@pytest.mark.parametrize("evidence", [row[1] for row in HEALTHY], ids=[row[0] for row in HEALTHY])
def test_healthy_gives_no_finding(evidence):
    assert diagnosis.diagnose(evidence) == []


def test_weights_oom_outranks_the_api_symptom():
    """A refused start explains the 401-free, unanswered API: the start's cause comes first."""
    found = diagnosis.diagnose({"log": log("oom-loading-weights.log") + log("hccl-timeout.log"),
                                "api": {"models": {"status": 401}}})
    assert [f["id"] for f in found] == ["oom_loading_weights", "api_key_mismatch", "hccl_timeout"]


def test_newest_start_attempt_counts():
    """Of two refusals in one journal the later line is the evidence."""
    found = diagnosis.diagnose({"log": log("kv-cache-v0.log") + log("kv-cache-estimate.log")})
    assert found[0]["value"] == 34736


@pytest.mark.parametrize("line, shown", [
    ("args: Namespace(host='0.0.0.0', port=8000, api_key=['sk-live-123'], lora_modules=None)",
     "args: Namespace(host='0.0.0.0', port=8000, api_key=['****'], lora_modules=None)"),
    ("non-default args: {'api_key': ['xxxxx'], 'port': 8004}", "non-default args: {'api_key': ['****'], 'port': 8004}"),
    ("vllm serve /m --api-key sk-live-123 --port 8000", "vllm serve /m --api-key **** --port 8000"),
    ("Environment=VLLM_API_KEY=sk-live-123", "Environment=VLLM_API_KEY=****"),
    ("RAY_AUTH_TOKEN=abcdef0123", "RAY_AUTH_TOKEN=****"),
    ("Authorization: Bearer sk-live-123", "Authorization: Bearer ****"),
    ("machine hub.example login alice password s3cret", "machine hub.example login **** password ****"),
    ("pip index https://bob:hunter2@pypi.example/simple", "pip index https://bob:****@pypi.example/simple"),
])
def test_mask(line, shown):
    assert diagnosis.mask(line) == shown


def test_evidence_is_masked():
    line = "OSError: [Errno 98] Address already in use (vllm serve --api-key sk-live-123)"
    (found,) = diagnosis.diagnose({"log": [line], "port": 8000})
    assert "sk-live-123" not in found["evidence"] and "****" in found["evidence"]


def test_summary_lists_most_likely_first():
    text = diagnosis.summary(diagnosis.diagnose({"kernel": log("xid-79.kernel.log"), "log": log("port-in-use.log"), "port": 8000}))
    assert text.splitlines()[0].startswith("1. [port_in_use]")
    assert diagnosis.summary([]) == "no known failure signature matched"


def test_ray_token_causes_differ():
    """A member with another token and a member without token mode get different causes, the same fix."""
    wrong = diagnosis.diagnose({"log": log("ray-token-refused.log")})[0]
    off = diagnosis.diagnose({"log": log("ray-token-mode-off.log")})[0]
    assert "other than the head's" in wrong["cause"] and "'disabled'" in off["cause"]
    assert wrong["fix"] == off["fix"]


def test_mask_tree_masks_secret_keys_whole():
    config = {"api-key": "sk-live-123", "model": "/m", "nested": [{"ray_token": "abc"}], "max-model-len": 2048,
              "served-model-name": ["smollm2"]}
    assert diagnosis.mask_tree(config) == {"api-key": "****", "model": "/m", "nested": [{"ray_token": "****"}],
                                           "max-model-len": 2048, "served-model-name": ["smollm2"]}
