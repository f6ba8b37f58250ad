# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""Parse the KEY=VALUE files that Ascend installers leave behind.

``/usr/local/Ascend/driver/version.info``, ``.../firmware/version.info``,
``/etc/ascend_install.info`` and the CANN ``ascend_toolkit_install.info`` all
use the same shell-like ``KEY=VALUE`` layout.  Keys keep their original case
because the files mix ``Version`` and ``version``; :func:`get_ci` looks them
up without caring.
"""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

from typing import Dict, Optional


def read_text(path: str) -> Optional[str]:
    """File contents, or ``None`` when it is missing or unreadable (both mean "not there")."""
    try:
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8", "replace")
    except OSError:
        return None


def parse_kv_text(text: Optional[str]) -> Dict[str, str]:
    """Return the ``KEY=VALUE`` pairs of ``text`` (comments and junk lines skipped).

    Values keep everything after the first ``=`` (``compatible_version`` holds
    commas and brackets), surrounding quotes are removed.  ``None`` or an empty
    string give an empty dict, so a missing file and an empty one look alike.
    """
    result: Dict[str, str] = {}
    if not text:
        return result
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, value = line.split("=", 1)
        key = key.strip()
        if key.startswith("export "):
            key = key[len("export "):].strip()
        if not key or " " in key:
            continue
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        result[key] = value
    return result


def get_ci(data: Dict[str, str], key: str) -> Optional[str]:
    """Look ``key`` up in ``data`` ignoring case; empty values count as missing."""
    wanted = key.lower()
    for name, value in data.items():
        if name.lower() == wanted and value != "":
            return value
    return None
