# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""Is an engine virtualenv or a model copy complete, and what does this run do with it?

A converge can be killed at any point (Ctrl-C, a lost SSH connection, a full
disk).  Two things must never be taken for complete afterwards:

- the engine virtualenv: it cannot be built elsewhere and renamed into place
  (a virtualenv holds its absolute path), so the install writes a completion
  marker as its last step and the instance's link is moved only to a marked
  virtualenv.  A virtualenv without the marker is recreated, unless it already
  holds the planned engine (an install finished before the marker existed, or
  one killed between its last step and the marker), which is adopted;
- a model copied from the controller: it is copied into a staging directory
  beside the target (same filesystem) and renamed into place with its marker
  inside, so the target directory is either absent or complete.  It is copied
  only when the free space (plus what a killed copy left in staging) holds it.
"""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

import os
import shutil

from ansible_collections.kunpeng.vllm.plugins.module_utils.backends import registry as backends

ENGINE_MARKER = ".kunpeng-vllm-complete"
MODEL_MARKER = ".kunpeng-model-complete"
STAGING_SUFFIX = ".partial"
# Free space kept beyond the model's size (file system metadata, rounding).
MODEL_MARGIN = 0.05


KEEP, INSTALL, ADOPT, RECREATE = "keep", "install", "adopt", "recreate"
# An incomplete virtualenv is renamed to <venv><suffix> before it is removed.
SET_ASIDE_SUFFIX = ".incomplete"


def set_aside(path, attempts=3):
    """Rename an incomplete tree out of its path in one step, then remove it.

    The rename frees the path at once, so the install that follows never
    depends on the removal: a tree that a pass of ``shutil.rmtree`` leaves
    behind ("Directory not empty" was seen right after a killed pip, on an
    overlay root file system; a later pass removed it) gets more passes, and
    whatever is still there is reported and swept by the next run.  Trees
    earlier runs set aside (``<path>.incomplete``, ``<path>.incomplete-N``)
    are removed first.  Returns the set-aside paths that could not be removed
    (empty when all went).
    """
    base = path.rstrip("/") + SET_ASIDE_SUFFIX
    for earlier in _set_aside_trees(base):
        _remove(earlier, attempts)
    if os.path.lexists(path):
        aside, n = base, 0
        while os.path.lexists(aside):
            n += 1
            aside = f"{base}-{n}"
        os.rename(path, aside)
        _remove(aside, attempts)
    return _set_aside_trees(base)


def _set_aside_trees(base):
    """``<base>`` and ``<base>-N`` where they exist, sorted."""
    parent, name = os.path.split(base)
    if not os.path.isdir(parent):
        return []
    return sorted(os.path.join(parent, entry) for entry in os.listdir(parent)
                  if entry == name or (entry.startswith(name + "-") and entry[len(name) + 1:].isdigit()))


def _remove(path, attempts):
    for _attempt in range(attempts):
        try:
            shutil.rmtree(path)
            return
        except FileNotFoundError:
            return
        except OSError:
            continue


def _release(version):
    """A recorded version without its local label (PEP 440): the cpu alias records ``<version>+cpu``."""
    return str(version or "").split("+", 1)[0]


def engine_installed(installed, backend, install_method, engine_version):
    """Does the virtualenv hold the planned engine?  Then the role's pip steps do not run again.

    The registry's ``engine_dist`` decides: its recorded version for a wheel install (the release; a local
    label such as ``+cpu`` does not count), its presence for a source build.  What the role writes after the
    pip steps (the cpu backend's ``vllm`` alias) is written on every converge and proves nothing here.
    """
    dist = backends.field(backend, "engine_dist")[install_method]
    version = (installed or {}).get(dist)
    if install_method == "source":
        return version is not None
    return _release(version) == engine_version


def _complete(installed, backend, install_method, engine_version):
    """Did every step run?  An unmarked virtualenv is adopted only then (the registry's ``engine_dists``)."""
    dists = backends.field(backend, "engine_dists")[install_method]
    if install_method == "source":
        return all(name in installed for name in dists)
    return all(_release(installed.get(name)) == engine_version for name in dists)


def engine_venv_action(venv_exists, python_exists, marker_exists, installed, backend, install_method, engine_version):
    """What the install does with the engine virtualenv: ``(action, reason)``.

    ``keep``: a marked virtualenv, install steps run as usual (idempotent);
    ``install``: no virtualenv yet; ``adopt``: unmarked but holding the
    planned engine, the marker is written; ``recreate``: unmarked and
    incomplete (a killed install), removed and installed again.
    """
    if not venv_exists:
        return INSTALL, "no virtualenv yet"
    if python_exists and marker_exists:
        return KEEP, "the virtualenv's install completed"
    if not python_exists:
        return RECREATE, "the virtualenv has no interpreter (its creation was interrupted)"
    dists = backends.field(backend, "engine_dists")[install_method]
    installed = installed or {}
    if _complete(installed, backend, install_method, engine_version):
        return ADOPT, "the virtualenv holds {} {} but no completion marker".format("/".join(dists), engine_version)
    found = ", ".join(f"{name} {installed[name]}" for name in sorted(installed)) or "no engine package"
    return RECREATE, f"the virtualenv has no completion marker and holds {found} (an interrupted install)"


def model_copy_action(target_exists, marker_exists):
    """``sync`` a complete model in place (idempotent copy), or ``stage`` a new or incomplete one."""
    if target_exists and marker_exists:
        return "sync"
    return "stage"


def model_fits(model_bytes, free_bytes, staged_bytes=0, margin=MODEL_MARGIN):
    """Does a copy of ``model_bytes`` fit in ``free_bytes`` when ``staged_bytes`` are already copied?"""
    needed = int(model_bytes * (1 + margin)) - staged_bytes
    return needed <= free_bytes, max(needed, 0)


def model_fit_message(model_bytes, free_bytes, staged_bytes, where):
    gib = 1024 ** 3
    staged = f" ({staged_bytes / gib:.2f} GiB of it already staged)" if staged_bytes else ""
    return (f"vllm_model_dir: the model needs {model_bytes / gib:.2f} GiB{staged} but {where} has "
            f"{free_bytes / gib:.2f} GiB free. Nothing was copied. Free space there or point vllm_model_dir at a "
            "larger filesystem.")


def existing_ancestor(path):
    """The nearest directory at or above ``path`` that exists (where a new directory's bytes will go)."""
    path = os.path.abspath(path)
    while not os.path.isdir(path):
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return path


def free_bytes(path):
    stat = os.statvfs(existing_ancestor(path))
    return stat.f_bavail * stat.f_frsize


def tree_bytes(path):
    """Apparent size of the regular files under ``path`` (0 when it does not exist)."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            full = os.path.join(root, name)
            if os.path.isfile(full) and not os.path.islink(full):
                total += os.path.getsize(full)
    return total
