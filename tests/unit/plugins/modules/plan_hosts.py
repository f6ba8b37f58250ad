"""Replayed hosts for the vllm_plan tests: kunpeng_accelerators facts from the real accelerator_facts module.

Each name maps to the module arguments (fakes.py) that replay a committed fixture host; :func:`facts`
probes it once per test session and hands out copies, so plan tests never use hand-written facts.
"""

import copy
import glob
import os
import shutil
import tempfile
from typing import Any, Callable, Dict, Optional

import fakes
from conftest import FIXTURES

A2 = os.path.join(FIXTURES, "ascend", "atlas-800i-a2")
A3 = os.path.join(FIXTURES, "ascend", "atlas-800i-a3")
DUO = os.path.join(FIXTURES, "ascend", "atlas-300i-duo")
A2_SYSFS = os.path.join(FIXTURES, "sysfs", "atlas-800i-a2")
PLAIN_SYSFS = os.path.join(FIXTURES, "sysfs", "plain-x86")
H100 = os.path.join(FIXTURES, "nvidia", "hgx-h100")
HOSTS_DIR = os.path.join(FIXTURES, "plan", "hosts")


def _a2(tmp: str, driver: bool = True) -> Dict[str, Any]:
    args = fakes.host_args(tmp, A2_SYSFS, "kunpeng920", "aarch64", **fakes.ascend_root(tmp))
    if driver:
        fakes.write_tool(args["tool_path"][0], "npu-smi", fakes.npu_smi_replies(A2))
    return args


def _rewritten(replies: Dict[Any, Any], *pairs: str) -> Dict[Any, Any]:
    """npu-smi replies with text swapped (``old, new, ...``): the same captured layout, another HBM size or chip."""
    out = {}
    for args, text in replies.items():
        for old, new in zip(pairs[::2], pairs[1::2]):
            text = text.replace(old, new)
        out[args] = text
    return out


def _ascend(case: str, cann: str, sysfs: Optional[str] = A2_SYSFS, rewrite=(), pci_device: Optional[str] = None) -> Callable[[str], Dict[str, Any]]:
    """An Ascend host: ``case``'s npu-smi output (None: no driver yet), the version files with CANN ``cann``.

    The toolkit's ``ascend_toolkit_install.info`` of fixtures/ascend/versions is installed with its version
    fields set to ``cann``; ``pci_device`` turns the A2 sysfs tree's chips into another PCI device id.
    """
    def build(tmp: str) -> Dict[str, Any]:
        tree = sysfs
        if sysfs and pci_device:
            tree = os.path.join(tmp, "sysfs")
            shutil.copytree(sysfs, tree, symlinks=True)
            for path in glob.glob(os.path.join(tree, "bus", "pci", "devices", "*", "device")):
                with open(path) as handle:
                    value = handle.read()
                if value.strip() == "0xd802":
                    with open(path, "w") as handle:
                        handle.write(value.replace("0xd802", pci_device))
        args = fakes.host_args(tmp, tree, "kunpeng920", "aarch64", **fakes.ascend_root(tmp))
        for info in glob.glob(os.path.join(args["ascend_root"], "ascend-toolkit", "latest", "*", "ascend_toolkit_install.info")):
            with open(info) as handle:
                text = handle.read()
            with open(info, "w") as handle:
                handle.write(text.replace("8.1.RC1", cann))
        if case:
            fakes.write_tool(args["tool_path"][0], "npu-smi", _rewritten(fakes.npu_smi_replies(case), *rewrite))
        return args
    return build


def _nvidia(folder: str) -> Callable[[str], Dict[str, Any]]:
    return lambda tmp: fakes.nvidia_host(tmp, os.path.join(HOSTS_DIR, folder))


# name: module arguments of accelerator_facts replaying that host (tmp: a scratch folder for /proc and the tools)
HOSTS: Dict[str, Callable[[str], Dict[str, Any]]] = {
    "cpu-x86": lambda tmp: fakes.host_args(tmp, PLAIN_SYSFS, "x86-avx2", "x86_64"),
    # CPU-only hosts by ISA (the served dtype depends on it): AMX (the H100 host's Sapphire Rapids CPU without its
    # GPUs), AVX512-BF16 without AMX, AVX2 only, and arm64 without (Kunpeng 920) and with BF16 (Neoverse V1).
    "cpu-x86-amx": lambda tmp: fakes.host_args(tmp, PLAIN_SYSFS, H100, "x86_64"),
    "cpu-x86-avx512bf16": lambda tmp: fakes.host_args(tmp, PLAIN_SYSFS, "x86-epyc-avx512bf16", "x86_64"),
    "cpu-x86-epyc-avx2": lambda tmp: fakes.host_args(tmp, PLAIN_SYSFS, "x86-epyc-avx2", "x86_64"),
    "cpu-kunpeng920": lambda tmp: fakes.host_args(tmp, PLAIN_SYSFS, "kunpeng920", "aarch64"),
    "cpu-neoverse-v1": lambda tmp: fakes.host_args(tmp, PLAIN_SYSFS, "neoverse-v1", "aarch64"),
    "hgx-h100": lambda tmp: fakes.nvidia_host(tmp, H100),
    # The H100 capture answering on an aarch64 host (as a Grace Hopper node reports its CPU).
    "hgx-h100-arm64": lambda tmp: fakes.nvidia_host(tmp, H100, "aarch64"),
    "hgx-h100-no-driver": lambda tmp: fakes.host_args(tmp, os.path.join(H100, "sysfs"), H100, "x86_64"),
    "atlas-800i-a2": _a2,
    "atlas-800i-a2-no-driver": lambda tmp: _a2(tmp, driver=False),
    # the A2's chips on the PCI bus and nothing of Huawei's installed: no driver, no CANN
    "atlas-800i-a2-bare": lambda tmp: fakes.host_args(tmp, A2_SYSFS, "kunpeng920", "aarch64",
                                                      ascend_root=os.path.join(tmp, "Ascend"),
                                                      ascend_install_info=os.path.join(tmp, "ascend_install.info")),
    # the same A2 layout with CANN 8.3.RC2; 8 x 910B4 32 GB, or 8 x 910B3 64 GB
    "atlas-800i-a2-32g-cann8.3": _ascend(A2, "8.3.RC2"),
    "atlas-800i-a2-64g-cann8.3": _ascend(A2, "8.3.RC2", rewrite=("32768", "65536", "910B4", "910B3")),
    # A3: 16 chips of 64 GB in npu-smi's A3 table layout, CANN 9.1.0 (no sysfs tree: the layout tells the series)
    "atlas-800i-a3-cann9.1": _ascend(A3, "9.1.0", sysfs=None, rewrite=("32768", "65536")),
    "atlas-300i-duo-cann8.3": _ascend(DUO, "8.3.RC2", sysfs=None),
    # Ascend 910 (Atlas A1, PCI d801) chips, driver not installed
    "atlas-a1-910": _ascend(None, "8.1.RC1", pci_device="0xd801"),
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


def role_plan(name: str, backend: str = "auto", engine_args: Optional[Dict[str, Any]] = None,
              plan_args: Optional[Dict[str, Any]] = None, **request: Any) -> Dict[str, Any]:
    """kunpeng_vllm_plan of a replayed host as the vllm role asks for it (the real planner, with a request).

    ``request`` holds the role's variables without the ``vllm_`` prefix (deployment.REQUEST_DEFAULTS);
    ``plan_args`` other options of kunpeng.vllm.vllm_plan (model_config, weight_dtype, ...).
    """
    from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import deployment
    from ansible_collections.kunpeng.vllm.plugins.modules import vllm_plan

    args = {key: copy.deepcopy(spec.get("default")) for key, spec in vllm_plan.ARGUMENT_SPEC.items()}
    args.update(accelerators=facts(name), backend=backend, python_version="3.11", distribution="Debian 12",
                model_name="smollm2", requested_engine_args=engine_args or {},
                request=dict({"install_dir": "/opt/vllm"}, **request))
    args.update(plan_args or {})
    return deployment.plan_host(args)
