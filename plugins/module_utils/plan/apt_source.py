# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""The deb822 apt sources the roles write (ansible.builtin.deb822_repository).

ansible.builtin.deb822_repository names its file after the source's name:
lower case, blanks and ``_`` turned into ``-``, anything but ``[a-z0-9-]``
dropped, in /etc/apt/sources.list.d with the ``.sources`` suffix.  Earlier
releases wrote the same sources from templates; as long as the name maps to
the path they used, the module rewrites that file in place instead of
leaving a second source for the same repository beside it.

``signed_by`` is given a keyring path: the module then writes that path
into ``Signed-By`` (it reads the key itself only when given a URL, and
copies the text of anything else into the source).
"""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

import re
from typing import Any, Dict, List, Optional

SOURCES_DIR = "/etc/apt/sources.list.d"


def sources_file(name: str) -> str:
    """The file ansible.builtin.deb822_repository writes for a source called ``name``."""
    slug = re.sub(r"[^a-z0-9-]+", "", re.sub(r"[_\s]+", "-", name.lower()))
    return f"{SOURCES_DIR}/{slug}.sources"


def _words(value: Any) -> List[str]:
    """A list of the non-empty words of a list or of a blank-separated text."""
    if value is None:
        return []
    items = value.split() if isinstance(value, str) else list(value)
    return [str(item).strip() for item in items if str(item).strip()]


def deb822_source(uri: str, name: str, suites: Any, components: Any = None,
                  keyring: str = "", trusted: bool = False,
                  path: Optional[str] = None) -> Dict[str, Any]:
    """The ansible.builtin.deb822_repository arguments of one binary source.

    A flat repository (one suite ending in ``/``, such as NVIDIA's CUDA
    repositories) has no components; any other needs at least one.  A
    source is either signed by ``keyring`` (an absolute path) or
    ``trusted``, never both.  ``path``, when given, is the file the caller
    documents: a name that would not land there raises, so a renamed source
    never leaves the old file beside the new one.
    """
    uri = (uri or "").strip()
    if not uri:
        raise ValueError(f"source {name!r} has no URI")
    suite_list = _words(suites)
    component_list = _words(components)
    if not suite_list:
        raise ValueError(f"source {name!r} has no suite")
    flat = any(suite.endswith("/") for suite in suite_list)
    if flat and (len(suite_list) > 1 or component_list):
        raise ValueError(f"source {name!r}: a flat suite ({suite_list[0]!r}) stands alone and takes no components")
    if not flat and not component_list:
        raise ValueError(f"source {name!r}: suites {suite_list} need at least one component")
    if trusted and keyring:
        raise ValueError(f"source {name!r} is either trusted or signed by {keyring!r}, not both")
    if keyring and not keyring.startswith("/"):
        raise ValueError(f"source {name!r}: the keyring {keyring!r} is not an absolute path")
    if path is not None and sources_file(name) != path:
        raise ValueError(f"source {name!r} would be written to {sources_file(name)}, not {path}")
    source: Dict[str, Any] = {"name": name, "types": ["deb"], "uris": [uri], "suites": suite_list}
    if component_list:
        source["components"] = component_list
    if keyring:
        source["signed_by"] = keyring
    if trusted:
        source["trusted"] = True
    return source
