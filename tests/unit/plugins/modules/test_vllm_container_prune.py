"""kunpeng.vllm.vllm_container_prune on a fake runtime that answers with the real listing shapes."""

import os
import sys

import pytest
from fakes import Reply, write_tool
from module_runner import run_main

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "module_utils"))

from test_container_images import A, B, DOCKER, PODMAN  # noqa: E402

from ansible_collections.kunpeng.vllm.plugins.modules import vllm_container_prune  # noqa: E402

LIST = {"podman": ("images", "--format", "json"),
        "docker": ("images", "--no-trunc", "--digests", "--format", "{{json .}}")}


def _runtime(tmp_path, monkeypatch, runtime, listing, rmi):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    write_tool(str(bin_dir), runtime, {LIST[runtime]: listing, ("rmi", "sha256:" + A): rmi})
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")


@pytest.mark.parametrize("runtime, listing", [("podman", PODMAN), ("docker", DOCKER)])
@pytest.mark.parametrize("check_mode", [True, False])
def test_removes_what_no_instance_uses(tmp_path, monkeypatch, runtime, listing, check_mode):
    _runtime(tmp_path, monkeypatch, runtime, listing, Reply(stdout="Untagged\n"))
    failed, result = run_main(vllm_container_prune.main, {
        "runtime": runtime, "images": ["sha256:" + A, "sha256:" + B],
        "in_use": [{"image": B, "instance": "qwen3"}]}, check_mode=check_mode)
    assert not failed, result
    assert result["changed"] is True
    assert [r["id"] for r in result["removed"]] == ["sha256:" + A]
    assert [(k["id"], k["why"]) for k in result["kept"]] == [("sha256:" + B, "instance qwen3 still uses it")]


def test_check_mode_runs_no_rmi(tmp_path, monkeypatch):
    """rmi fails on this runtime: only a real run reaches it."""
    _runtime(tmp_path, monkeypatch, "podman", PODMAN, Reply(rc=2, stderr="Error: image is in use by a container"))
    args = {"runtime": "podman", "images": ["sha256:" + A]}
    failed, result = run_main(vllm_container_prune.main, args, check_mode=True)
    assert not failed and result["changed"]
    failed, result = run_main(vllm_container_prune.main, args)
    assert failed and "podman rmi sha256:" + A in result["msg"] and "in use by a container" in result["msg"]


def test_nothing_to_remove_is_no_change(tmp_path, monkeypatch):
    _runtime(tmp_path, monkeypatch, "podman", PODMAN, Reply())
    failed, result = run_main(vllm_container_prune.main, {"runtime": "podman", "images": ["quay.io/x@sha256:" + "9" * 64]})
    assert not failed and not result["changed"] and result["absent"] == ["quay.io/x@sha256:" + "9" * 64]


def test_a_runtime_that_is_gone_removes_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    failed, result = run_main(vllm_container_prune.main, {"runtime": "docker", "images": ["sha256:" + A]})
    assert not failed and not result["changed"] and "docker is not installed" in result["msg"]
