"""The air-gapped wheel set and the host-torch check, replayed on what the H200 build and host really gave."""

import json
import os
import subprocess
import sys

import pytest
from conftest import FIXTURES

from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import wheelhouse
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.compat_matrix import CompatError

SERVE = ("nvidia", "h200", "offline-serve")


def lines(*parts):
    with open(os.path.join(FIXTURES, *parts)) as handle:
        return handle.read().splitlines()


def manifest():
    with open(os.path.join(FIXTURES, *SERVE, "manifest.json")) as handle:
        return json.load(handle)


def host_versions():
    """What host_torch's probe reads on the H200, taken from the host's pip freeze."""
    pins = dict(wheelhouse.parse_pins(lines(*SERVE, "host-freeze.txt")))
    return {"torch": pins.get("torch"), "torch_npu": pins.get("torch-npu")}


@pytest.mark.parametrize("line, expected", [
    ("vllm==0.26.0", [("vllm", "0.26.0")]),
    ("Torch_NPU == 2.10.0.post4  # vendor", [("torch-npu", "2.10.0.post4")]),
    ("torch==2.11.0+cu130", [("torch", "2.11.0+cu130")]),
    ("# comment", []),
    ("--index-url https://mirror/simple", []),
    ("numpy", []),
    ("pkg @ https://host/pkg.whl", []),
])
def test_parse_pins(line, expected):
    assert wheelhouse.parse_pins([line]) == expected


def test_the_builder_output_is_the_resolution_minus_what_it_left_out():
    """requirements.txt of the H200 wheelhouse is exactly select_downloads of its inputs."""
    left = manifest()["left_out"]
    asked = [item["name"] for item in left if item["reason"] == "left out on request"]
    picked = wheelhouse.select_downloads(lines(*SERVE, "resolved.txt"), lines(*SERVE, "target-has.txt"), asked)
    assert picked["download"] == [line for line in lines(*SERVE, "requirements.txt") if line]
    assert picked["left_out"] == left
    assert picked["unknown_leave_out"] == []
    assert len(picked["download"]) == 167


def test_the_real_host_freeze_leaves_out_its_torch_but_not_numpy_or_numba():
    """The H200 has torch 2.11.0 (kept) but numpy 2.5.2 and numba 0.68.0, which vLLM 0.26.0 does not run with."""
    picked = wheelhouse.select_downloads(lines(*SERVE, "resolved.txt"), lines(*SERVE, "host-freeze.txt"))
    reasons = {item["name"]: item["reason"] for item in picked["left_out"]}
    assert reasons["torch"] == reasons["triton"] == "the target has it"
    assert "numpy==2.3.5" in picked["download"]
    assert "numba==0.65.0" in picked["download"]
    assert "vllm==0.26.0" in picked["download"]


@pytest.mark.parametrize("has, expected", [
    (["torch==2.11.0+cu130"], "the target has it"),   # local labels do not count
    (["torch==2.11"], "the target has it"),           # trailing zeros do not count
    (["torch==2.10.0"], None),                        # another version: the venv gets its own
    ([], None),
])
def test_exact_versions_only_are_left_out(has, expected):
    picked = wheelhouse.select_downloads(["torch==2.11.0"], has)
    assert (picked["left_out"][0]["reason"] if picked["left_out"] else None) == expected


def test_unknown_names_to_leave_out_are_reported():
    picked = wheelhouse.select_downloads(["vllm==0.26.0"], leave_out=["PyNvVideoCodec", "typo-pkg"])
    assert picked["unknown_leave_out"] == ["pynvvideocodec", "typo-pkg"]
    assert picked["download"] == ["vllm==0.26.0"]


@pytest.mark.parametrize("glibc, newest, oldest_manylinux", [
    ("2.39", "manylinux_2_39_x86_64", "manylinux1_x86_64"),
    ("2.34", "manylinux_2_34_x86_64", "manylinux1_x86_64"),
    ("2.28", "manylinux_2_28_x86_64", "manylinux1_x86_64"),
])
def test_platform_tags_follow_the_target_glibc(glibc, newest, oldest_manylinux):
    tags = wheelhouse.manylinux_platforms("x86_64", glibc)
    assert tags[0] == newest
    assert tags[-3:] == [oldest_manylinux, "linux_x86_64", "any"]
    assert "manylinux_2_31_x86_64" in tags if glibc >= "2.31" else "manylinux_2_31_x86_64" not in tags
    # every glibc 2.N down to manylinux2014's 2.17, one by one (pip matches --platform exactly)
    minor = int(glibc.split(".")[1])
    assert tags[:minor - 16] == [f"manylinux_2_{n}_x86_64" for n in range(minor, 16, -1)]


@pytest.mark.parametrize("glibc, uv", [
    ("2.39", "x86_64-manylinux_2_39"), ("2.42", "x86_64-manylinux_2_40"), ("2.17", "x86_64-manylinux_2_17")])
def test_uv_platform_is_the_target_glibc_up_to_what_uv_names(glibc, uv):
    assert wheelhouse.target_for("cuda", "0.26.0", "3.12", "x86_64", glibc)["uv_python_platform"] == uv


@pytest.mark.parametrize("python, expected", [("3.12", ["cp312", "abi3", "none"]), ("3.10", ["cp310", "abi3", "none"])])
def test_abis(python, expected):
    assert wheelhouse.abis(python) == expected


def test_the_module_utils_import_without_packaging(collections_path):
    """host_torch runs host_torch_problem on nodes whose Python may lack packaging."""
    code = ("import builtins, sys; real = builtins.__import__\n"
            "def block(name, *a, **k):\n"
            "    if name.split('.')[0] == 'packaging': raise ImportError(name)\n"
            "    return real(name, *a, **k)\n"
            "builtins.__import__ = block\n"
            "from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import wheelhouse as w\n"
            "assert w.PACKAGING_IMPORT_ERROR and 'ImportError' in w.PACKAGING_IMPORT_ERROR\n"
            "print(w.host_torch_problem({'vllm': '0.26.0', 'torch': '2.11.0'}, {'torch': '2.11.0+cu130'}))\n")
    env = dict(os.environ, PYTHONPATH=collections_path)
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False)
    assert (proc.returncode, proc.stdout.strip()) == (0, "None"), proc.stderr


def test_target_for_the_h200():
    target = wheelhouse.target_for("cuda", "0.26.0", "3.12", "x86_64", "2.39")
    assert target["requirements"] == ["vllm==0.26.0"]
    assert target["row"]["torch"] == "2.11.0"
    assert target["uv_python_platform"] == "x86_64-manylinux_2_39"
    assert target["pip_abis"] == ["cp312", "abi3", "none"]


@pytest.mark.parametrize("args, message", [
    (("ascend", "0.23.0", "3.11", "aarch64"), "no wheelhouse recipe"),
    (("cuda", "0.26.0", "3.12", "ppc64le"), "architecture ppc64le"),
    (("cuda", "0.99.0", "3.12", "x86_64"), "no CUDA row"),
    (("cuda", "0.26.0", "3.9", "x86_64"), "Python 3.9"),
])
def test_target_for_refuses(args, message):
    with pytest.raises(CompatError, match=message):
        wheelhouse.target_for(*args)


def test_glibc_older_than_manylinux2014_is_refused():
    with pytest.raises(CompatError, match="older than manylinux2014"):
        wheelhouse.manylinux_platforms("x86_64", "2.12")


@pytest.mark.parametrize("row, host, expected", [
    ({"vllm": "0.26.0", "torch": "2.11.0"}, None, None),                       # the H200, as it is
    ({"vllm": "0.32.0", "torch": "2.13.0"}, None, "the host's torch is 2.11.0 but the vLLM 0.32.0 row pins torch==2.13.0"),
    ({"vllm": "0.26.0", "torch": "2.11.0"}, {"torch": "2.11.0+cu130"}, None),
    ({"vllm": "0.26.0", "torch": "2.11.0"}, {"torch": None}, "has no torch"),
    ({"vllm": "0.23.0", "torch": "2.10.0", "torch_npu": "2.10.0.post4"},
     {"torch": "2.10.0", "torch_npu": "2.10.0.post3"}, "torch-npu is 2.10.0.post3"),
    ({"vllm": "0.23.0", "torch": "2.10.0", "torch_npu": "2.10.0.post4"},
     {"torch": "2.10.0", "torch_npu": "2.10.0.post4"}, None),
])
def test_host_torch_problem(row, host, expected):
    problem = wheelhouse.host_torch_problem(row, host or host_versions())
    if expected is None:
        assert problem is None
    else:
        assert expected in problem
        assert "vllm_reuse_host_torch" in problem
