"""host_torch and wheelhouse_plan as Ansible runs them."""

import os
import stat
import sys

import pytest

from conftest import FIXTURES
from module_runner import run_main

from ansible_collections.kunpeng.vllm.plugins.modules import host_torch, wheelhouse_plan

SERVE = os.path.join(FIXTURES, "nvidia", "h200", "offline-serve")


def interpreter_with_torch(tmp_path, version):
    """A real Python whose path also holds an installed ``torch`` distribution of ``version``."""
    site = tmp_path / "site"
    info = site / f"torch-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: torch\nVersion: {version}\n")
    wrapper = tmp_path / "python3"
    wrapper.write_text(f'#!/bin/sh\nPYTHONPATH={site} exec {sys.executable} "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    return str(wrapper)


def test_host_torch_matching_the_row(tmp_path):
    failed, result = run_main(host_torch.main, {"python": interpreter_with_torch(tmp_path, "2.11.0+cu130"),
                                                "row": {"vllm": "0.26.0", "torch": "2.11.0"}})
    assert not failed, result
    assert result["torch"] == "2.11.0+cu130"
    assert result["problem"] is None
    assert result["python_version"] == f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert result["site_packages"] and all(os.path.isabs(p) for p in result["site_packages"])


def test_host_torch_of_another_row_fails_with_the_fix(tmp_path):
    failed, result = run_main(host_torch.main, {"python": interpreter_with_torch(tmp_path, "2.11.0+cu130"),
                                                "row": {"vllm": "0.32.0", "torch": "2.13.0"}})
    assert failed
    assert "the host's torch is 2.11.0+cu130 but the vLLM 0.32.0 row pins torch==2.13.0" in result["msg"]
    failed, result = run_main(host_torch.main, {"python": interpreter_with_torch(tmp_path, "2.11.0"),
                                                "row": {"vllm": "0.32.0", "torch": "2.13.0"}, "fail_on_mismatch": False})
    assert not failed and "2.13.0" in result["problem"]


def test_host_torch_with_a_missing_interpreter(tmp_path):
    failed, result = run_main(host_torch.main, {"python": str(tmp_path / "nope"), "row": {"vllm": "0.26.0", "torch": "2.11.0"}})
    assert failed
    assert "vllm_host_torch_python" in result["msg"]


def test_wheelhouse_plan_replays_the_h200_build():
    with open(os.path.join(SERVE, "resolved.txt")) as handle:
        resolved = handle.read().splitlines()
    with open(os.path.join(SERVE, "host-freeze.txt")) as handle:
        freeze = handle.read().splitlines()
    failed, result = run_main(wheelhouse_plan.main, {"vllm_version": "0.26.0", "python_version": "3.12", "glibc": "2.39",
                                                     "resolved": resolved, "target_has": freeze})
    assert not failed, result
    assert result["changed"] is False
    assert result["requirements"] == ["vllm==0.26.0"]
    assert len(result["download"]) == 146          # what the issue measured for this host
    assert result["uv_python_platform"] == "x86_64-manylinux_2_39"


def test_wheelhouse_plan_refuses_an_unknown_row():
    failed, result = run_main(wheelhouse_plan.main, {"vllm_version": "0.99.0", "python_version": "3.12"})
    assert failed and "no CUDA row" in result["msg"]


def _executable(path):
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


@pytest.mark.parametrize(("uv", "found"), [
    ("bin/uv", True),                      # a path
    ("uv-on-path", True),                  # a name on the PATH
    ("uv-not-installed-here", False),
    ("bin/not-there/uv", False),
])
def test_wheelhouse_plan_finds_uv_or_says_how_to_get_it(tmp_path, monkeypatch, uv, found):
    (tmp_path / "bin").mkdir()
    _executable(tmp_path / "bin" / "uv")
    _executable(tmp_path / "bin" / "uv-on-path")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    given = str(tmp_path / uv) if "/" in uv else uv
    failed, result = run_main(wheelhouse_plan.main, {"vllm_version": "0.26.0", "python_version": "3.12", "uv": given})
    if found:
        assert not failed, result
        assert result["uv_path"] == str(tmp_path / "bin" / os.path.basename(uv))
    else:
        assert failed
        assert "uv is not found on the controller" in result["msg"] and repr(given) in result["msg"]
        assert "pip install uv" in result["msg"] and "wheelhouse_uv" in result["msg"]
