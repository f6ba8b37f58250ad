# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""Does a model copied from the controller need copying again?

Checksumming every file of a model on each run (what ``ansible.builtin.copy``
does to find nothing to do) costs seconds for a small model and minutes for a
large one.  After a successful copy the role stores a manifest in the model
directory: the relative path, size and modification time of every file on the
controller (``source``) and of the copy on the node (``target``).  A later run
compares these cheap identities: when both sides still match what was stored,
the copy is kept without reading a byte; when either differs (the controller's
model was replaced, a file on the node was edited or removed), or when the
user asks for it (``vllm_model_verify``), the copy runs with checksums.
"""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

import os

from ansible_collections.kunpeng.vllm.plugins.module_utils.execute.install_state import MODEL_MARKER

MANIFEST = ".kunpeng-model-manifest.json"
MANIFEST_VERSION = 1

KEEP, SYNC, STAGE = "keep", "sync", "stage"


def scan(root, skip=(MODEL_MARKER, MANIFEST)):
    """``{relative path: [size, whole-second mtime]}`` of the regular files under ``root`` ({} when absent).

    The role's own files at the top (completion marker, manifest) are left out.
    """
    found = {}
    for here, dirs, files in os.walk(root):
        dirs.sort()
        for name in files:
            full = os.path.join(here, name)
            rel = os.path.relpath(full, root)
            if rel in skip or os.path.islink(full) or not os.path.isfile(full):
                continue
            info = os.stat(full)
            found[rel] = [info.st_size, int(info.st_mtime)]
    return found


def manifest_bytes(files):
    return sum(size for size, _mtime in (files or {}).values())


def differences(stored, current):
    """Sorted relative paths added, removed or changed (size or mtime) between two scans."""
    stored, current = stored or {}, current or {}
    return sorted(path for path in set(stored) | set(current) if stored.get(path) != current.get(path))


def _listed(paths, limit=3):
    shown = ", ".join(paths[:limit])
    return shown + (f" and {len(paths) - limit} more" if len(paths) > limit else "")


def copy_action(complete, source, stored, target, verify=False):
    """What the model copy does: ``(action, reason)``.

    ``complete``: the model directory exists with its completion marker;
    ``source``: the scan of the controller's model; ``stored``: the manifest an
    earlier copy wrote (None when absent or unreadable); ``target``: the scan
    of the node's copy now; ``verify``: compare checksums whatever the
    manifest says.  ``stage``: copy into the staging directory and rename
    into place; ``sync``: copy in place with checksums (changes only what
    differs); ``keep``: nothing to copy.
    """
    if not complete:
        return STAGE, "no complete copy on the node: the model is staged, then renamed into place"
    if verify:
        return SYNC, "vllm_model_verify is true: every file is compared by checksum"
    if not isinstance(stored, dict) or stored.get("version") != MANIFEST_VERSION:
        return SYNC, "no manifest of an earlier copy: every file is compared by checksum"
    changed = differences(stored.get("source"), source)
    if changed:
        return SYNC, f"the model on the controller changed since the last copy ({_listed(changed)}): it is synced"
    changed = differences(stored.get("target"), target)
    if changed:
        return SYNC, f"the copy on the node changed since it was made ({_listed(changed)}): it is synced"
    return KEEP, "the sizes and modification times match the manifest of the last copy: nothing to copy"


def manifest(source, target):
    """The document stored after a successful copy."""
    return {"version": MANIFEST_VERSION, "source": source, "target": target}
