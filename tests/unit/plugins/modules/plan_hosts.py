"""Replayed hosts for the vllm_plan tests: kunpeng_accelerators facts from the real accelerator_facts module.

Each name maps to the module arguments (fakes.py) that replay a committed fixture host; :func:`facts`
probes it once per test session and hands out copies, so plan tests never use hand-written facts.
"""

import copy
import os
import tempfile
from typing import Any, Callable, Dict

import fakes
from conftest import FIXTURES

A2 = os.path.join(FIXTURES, "ascend", "atlas-800i-a2")
A2_SYSFS = os.path.join(FIXTURES, "sysfs", "atlas-800i-a2")
PLAIN_SYSFS = os.path.join(FIXTURES, "sysfs", "plain-x86")
H100 = os.path.join(FIXTURES, "nvidia", "hgx-h100")
HOSTS_DIR = os.path.join(FIXTURES, "plan", "hosts")


def _a2(tmp: str, driver: bool = True) -> Dict[str, Any]:
    args = fakes.host_args(tmp, A2_SYSFS, "kunpeng920", "aarch64", **fakes.ascend_root(tmp))
    if driver:
        fakes.write_tool(args["tool_path"][0], "npu-smi", fakes.npu_smi_replies(A2))
    return args


def _nvidia(folder: str) -> Callable[[str], Dict[str, Any]]:
    return lambda tmp: fakes.nvidia_host(tmp, os.path.join(HOSTS_DIR, folder))


# name: module arguments of accelerator_facts replaying that host (tmp: a scratch folder for /proc and the tools)
HOSTS: Dict[str, Callable[[str], Dict[str, Any]]] = {
    "cpu-x86": lambda tmp: fakes.host_args(tmp, PLAIN_SYSFS, "x86-avx2", "x86_64"),
    "hgx-h100": lambda tmp: fakes.nvidia_host(tmp, H100),
    "hgx-h100-no-driver": lambda tmp: fakes.host_args(tmp, os.path.join(H100, "sysfs"), H100, "x86_64"),
    "atlas-800i-a2": _a2,
    "atlas-800i-a2-no-driver": lambda tmp: _a2(tmp, driver=False),
    "v100-driver580": _nvidia("v100-sxm2-driver580"),
    "a100-driver535": _nvidia("a100-sxm4-80g-driver535"),
    "a100-driver580": _nvidia("a100-sxm4-80g-driver580"),
    "v100-and-l40s": _nvidia("v100-and-l40s-driver580"),
}
_CACHE: Dict[str, Dict[str, Any]] = {}


def facts(name: str) -> Dict[str, Any]:
    """The kunpeng_accelerators fact of a replayed host (a copy; probed once per session)."""
    if name not in _CACHE:
        result, dummy = fakes.run_module(HOSTS[name](tempfile.mkdtemp(prefix=f"kvllm-{name}-")))
        _CACHE[name] = fakes.facts_of(result)
    return copy.deepcopy(_CACHE[name])
