# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""Decide the exact wheel set of an air-gapped engine install, and whether a host's torch can be reused.

The wheelhouse is built on a connected controller for a *target*: backend,
vLLM row of :mod:`compat_matrix`, the target's Python version and machine
architecture.  Resolution is done by ``uv pip compile --python-platform
<arch>-manylinux_2_<glibc> --python-version X.Y`` (pip's ``--platform`` download
mode evaluates environment markers for the controller, not for the target),
then every pinned wheel is fetched with ``pip download --no-deps`` for the
target's platform tags.  The target installs that pinned list with
``--no-index --no-deps``, so what is in the wheelhouse is exactly what runs.

Two things may be left out of the download:

* what the target already has (``name==version`` lines of the target's
  ``pip list --format=freeze``), for hosts whose vendor image ships torch or
  torch_npu (NGC, Ascend images) and whose engine venv reuses it
  (:func:`host_torch_problem`);
* optional dependencies a site does not use (names), such as vLLM's video
  decoder or the CUDA 12 build of a CUDA 13 host's kernel DSL.
"""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

import traceback
from typing import Any, Dict, Iterable, List, Optional, Tuple

from ansible_collections.kunpeng.vllm.plugins.module_utils.backends import registry as backends
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import compat_matrix

# packaging (PyPA's reference implementation of names, requirements and tags)
# is a dependency of ansible-core, so the controller, where wheelhouse_plan
# runs, has it. host_torch runs host_torch_problem on the nodes, which need
# not have it: it uses none of it, and this module imports without it.
try:
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.tags import cpython_tags
    from packaging.utils import canonicalize_name
except ImportError:
    PACKAGING_IMPORT_ERROR: Optional[str] = traceback.format_exc()
else:
    PACKAGING_IMPORT_ERROR = None

ARCHITECTURES = ("x86_64", "aarch64")
# manylinux2014 is manylinux_2_17 (PEP 599, PEP 600): the oldest glibc the
# engine's wheels are built for.
OLDEST_GLIBC_MINOR = 17
# The newest manylinux_2_N that `uv pip compile --python-platform` names
# (uv 0.13: x86_64-manylinux_2_40); a newer glibc resolves as that one.
UV_NEWEST_GLIBC_MINOR = 40


def canonical(name: str) -> str:
    """PEP 503 normalised project name (``Torch_NPU`` -> ``torch-npu``)."""
    return str(canonicalize_name(name))


def public_version(version: str) -> str:
    """The version without its local label (``2.11.0+cu130`` -> ``2.11.0``)."""
    return str(version).split("+", 1)[0]


def parse_pins(lines: Iterable[str]) -> List[Tuple[str, str]]:
    """``(canonical name, version)`` of every ``name==version`` line; comments, options, bare names and URLs are skipped."""
    pins = []
    for line in lines:
        text = line.split(" #", 1)[0].strip()
        if not text or text.startswith(("#", "-")):
            continue
        try:
            requirement = Requirement(text)
        except InvalidRequirement:
            continue
        specifiers = list(requirement.specifier)
        if requirement.url is None and len(specifiers) == 1 and specifiers[0].operator == "==":
            pins.append((canonical(requirement.name), specifiers[0].version))
    return pins


def manylinux_platforms(architecture: str, glibc: str) -> List[str]:
    """pip ``--platform`` values a target with this glibc accepts, newest first.

    PEP 600 tags for every glibc 2.N from the target's down to 2.17, then the
    legacy names of the same ABI. packaging.tags has these only for the
    running host's glibc, so they are written out here for the target's.
    pip matches ``--platform`` exactly, so each is passed.
    """
    major, minor = (int(part) for part in str(glibc).split(".")[:2])
    if major != 2 or minor < OLDEST_GLIBC_MINOR:
        raise compat_matrix.CompatError(f"glibc {glibc} is older than manylinux2014 (2.17); wheels of this engine need 2.17 or later")
    tags = [f"manylinux_2_{n}_{architecture}" for n in range(minor, OLDEST_GLIBC_MINOR - 1, -1)]
    return tags + [f"manylinux2014_{architecture}", f"manylinux1_{architecture}", f"linux_{architecture}", "any"]


def abis(python_version: str) -> List[str]:
    """pip ``--abi`` values of a CPython X.Y target, in packaging.tags' order (``cp312``, ``abi3``, ``none``)."""
    version = tuple(int(part) for part in python_version.split(".")[:2])
    found: List[str] = []
    for tag in cpython_tags(python_version=version, platforms=["any"]):
        if tag.abi not in found:
            found.append(tag.abi)
    return found


def missing_uv_message(uv: str) -> str:
    """What to do when the uv executable ``uv`` (the role's ``wheelhouse_uv``) is not on the controller.

    Without this, the resolution's command fails with only "Error executing command." (rc 2).
    """
    return (f"uv is not found on the controller (wheelhouse_uv: {uv!r}), and the wheelhouse role resolves the row for "
            "the target's platform and Python with 'uv pip compile'. Install it into the environment Ansible runs "
            "from ('pip install uv'; the project's requirements-dev.txt and meta/ee-requirements.txt list it), or set "
            "wheelhouse_uv to the full path of a uv executable.")


def target_for(backend: str, vllm_version: str, python_version: str, architecture: str,
               glibc: str = "2.34") -> Dict[str, Any]:
    """Top-level requirements and platform options for one target; raises CompatError for an unknown row."""
    if architecture not in ARCHITECTURES:
        raise compat_matrix.CompatError(f"architecture {architecture} has no manylinux wheels here; use one of "
                                        f"{', '.join(ARCHITECTURES)}")
    engine = backends.backend(backend)
    row = engine.wheelhouse_row(vllm_version, python_version)
    return {
        "row": row,
        "requirements": engine.packages(row),
        "uv_python_platform": f"{architecture}-manylinux_2_{min(int(str(glibc).split('.')[1]), UV_NEWEST_GLIBC_MINOR)}",
        "pip_platforms": manylinux_platforms(architecture, glibc),
        "pip_abis": abis(python_version),
        "python_version": python_version,
    }


def select_downloads(resolved: Iterable[str], target_has: Iterable[str] = (),
                     leave_out: Iterable[str] = ()) -> Dict[str, Any]:
    """Split a resolved pin list into what to download and what to leave out (with the reason).

    A pin is left out when the target has exactly that version (local labels
    such as ``+cu130`` do not count) or when its name is in ``leave_out``.
    A different version on the target is downloaded: the engine venv's copy
    shadows the host's.
    """
    has = {name: public_version(version) for name, version in parse_pins(target_has)}
    skip = {canonical(name) for name in leave_out}
    download, left_out = [], []
    for name, version in parse_pins(resolved):
        if name in skip:
            left_out.append({"name": name, "version": version, "reason": "left out on request"})
        elif name in has and compat_matrix.version_cmp(has[name], public_version(version)) == 0:
            left_out.append({"name": name, "version": version, "reason": "the target has it"})
        else:
            download.append(f"{name}=={version}")
    unknown = sorted(skip - {item["name"] for item in left_out})
    return {"download": download, "left_out": left_out, "unknown_leave_out": unknown}


def host_torch_problem(row: Dict[str, Any], host: Dict[str, Any]) -> Optional[str]:
    """Why the host's torch cannot serve this row (None when it can).

    ``host`` is what the host interpreter reports: ``torch`` (its version,
    ``None`` when torch is not importable) and, for Ascend rows, ``torch_npu``.
    """
    wanted = {"torch": row.get("torch"), "torch_npu": row.get("torch_npu")}
    for key, want in wanted.items():
        if not want:
            continue
        found = host.get(key)
        label = key.replace("_", "-")
        if not found:
            return (f"the host interpreter has no {label}; the vLLM {row.get('vllm')} row needs {label}=={want}. "
                    "Set vllm_reuse_host_torch to false or point vllm_host_torch_python at the environment that has it")
        if compat_matrix.version_cmp(public_version(found), public_version(want)) != 0:
            return (f"the host's {label} is {found} but the vLLM {row.get('vllm')} row pins {label}=={want}. "
                    f"Choose the vllm_version whose row pins {label} {public_version(found)}, or set vllm_reuse_host_torch "
                    "to false")
    return None
