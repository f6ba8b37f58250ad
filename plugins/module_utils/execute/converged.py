# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""Is this host still exactly what the last successful converge left?

A converge that finds nothing to do still runs every install and configure
task, each a round trip of its own.  After a successful converge the role
records, in one root-only JSON file per instance, what the host then held:

- ``fingerprint``: the digest of every input of the converge (the plan and
  the role variables), computed by the caller; a change of any input is a
  change of this string;
- ``files``: the sha256 of each file the converge wrote (engine config, unit,
  drop-ins, environment file, launcher), ``None`` for one that was absent;
- ``venv``: the lock of the engine virtualenv, as :mod:`engine_artifact`
  reads it (``name -> version`` and the sha256 of each ``dist-info/RECORD``);
- ``model``: the manifest of the model directory, as :mod:`model_state`
  scans it (relative path -> size and whole-second mtime);
- ``service``: the systemd unit's name.

A later run builds the same document from the same inputs and compares
(:func:`drift`); with the unit active and the endpoint listing the model,
an empty drift means the install and configure tasks can be skipped.  The
record holds digests and file identities only, never a file's content or a
secret.  Everything here is a plain function; the module
``kunpeng.vllm.vllm_converged`` runs ``systemctl`` and the HTTP request.
"""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

import glob
import json
import os

from ansible_collections.kunpeng.vllm.plugins.module_utils.execute import engine_artifact, model_state
from ansible_collections.kunpeng.vllm.plugins.module_utils.verify import vllm_http

FORMAT = 1
NO_RECORD = "no record"
# Sentences listed per kind of difference before the rest are only counted:
# a replaced virtualenv or model would otherwise fill the play's output.
LIMIT = 10
RECORD_MODE = 0o600
DIR_MODE = 0o700


def file_digest(path):
    """sha256 of the file at ``path``, None when there is no such file; OSError names a file that cannot be read."""
    if not os.path.isfile(path):
        return None
    try:
        return engine_artifact._sha256_file(path)  # pylint: disable=protected-access
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, path) from None


def site_packages(venv):
    """The virtualenv's ``lib/pythonX.Y/site-packages``, None when there is none."""
    found = sorted(glob.glob(os.path.join(glob.escape(venv), "lib", "python*", "site-packages")))
    return found[0] if found else None


def venv_state(venv):
    """``{"path", "distributions"}`` of the virtualenv at ``venv``; distributions None when it is missing."""
    site = site_packages(venv)
    dists = engine_artifact.read_lock(site)["distributions"] if site else None
    return {"path": venv, "distributions": dists}


def model_manifest(model_dir):
    """``{"path", "files"}`` of the model directory; files None when it is missing."""
    files = model_state.scan(model_dir) if os.path.isdir(model_dir) else None
    return {"path": model_dir, "files": files}


def build_record(fingerprint, files=(), venv="", model_dir="", service="", plan=None):
    """The document recorded after a converge, read from the host now (the same inputs give the same document).

    ``plan`` is the plan's numbers (vllm_plan's ``numbers``), kept for kunpeng.vllm.vllm_diagnose and not
    compared by :func:`drift`: the fingerprint already covers the plan.
    """
    return {
        "format": FORMAT,
        "fingerprint": fingerprint,
        "files": {path: file_digest(path) for path in files},
        "venv": venv_state(venv) if venv else None,
        "model": model_manifest(model_dir) if model_dir else None,
        "service": service or "",
        "plan": dict(plan or {}),
    }


def dumps(record):
    """The record's file content: canonical JSON, so equal records are equal bytes."""
    return json.dumps(record, sort_keys=True, indent=1) + "\n"


def parse_record(text):
    """The record in ``text``; ValueError says why it is not one."""
    try:
        record = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"not JSON ({exc})") from None
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        raise ValueError(f"not a format {FORMAT} record")
    return record


def read_record(path):
    """``(record, text, problem)``: the stored record and its text, or None and why there is none.

    ``problem`` starts with "no record"; ``text`` is the file's content
    whenever it could be read (for the diff of a rewrite).
    """
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except FileNotFoundError:
        return None, None, NO_RECORD
    except (OSError, UnicodeDecodeError) as exc:
        return None, None, f"{NO_RECORD} ({path} is unreadable: {exc})"
    try:
        return parse_record(text), text, None
    except ValueError as exc:
        return None, text, f"{NO_RECORD} ({path} is {exc})"


def _capped(sentences, what):
    if len(sentences) <= LIMIT:
        return sentences
    return sentences[:LIMIT] + [f"and {len(sentences) - LIMIT} more {what} differences"]


def _moved(what, before, after):
    return f"{what} changed: {before or 'none'} -> {after or 'none'}"


def file_drift(recorded, current):
    """One sentence per file whose digest differs (edited, missing, appeared) or whose checking changed."""
    recorded, current = recorded or {}, current or {}
    sentences = []
    for path in sorted(set(recorded) | set(current)):
        if path not in recorded:
            sentences.append(f"{path} is not in the record")
        elif path not in current:
            sentences.append(f"{path} is in the record but no longer checked")
        elif recorded[path] == current[path]:
            continue
        elif current[path] is None:
            sentences.append(f"{path} missing")
        elif recorded[path] is None:
            sentences.append(f"{path} appeared")
        else:
            sentences.append(f"{path} edited")
    return _capped(sentences, "file")


_PACKAGE_DRIFT = {
    engine_artifact.REMOVED: "package {name} {was[version]} removed",
    engine_artifact.ADDED: "package {name} {now[version]} added",
    engine_artifact.VERSION: "package {name} {was[version]} -> {now[version]}",
    engine_artifact.CONTENT: "package {name} {now[version]} changed (its {now[hashed]} differs)",
}


def package_drift(recorded, current):
    """One sentence per distribution whose version or RECORD digest differs, or that was added or removed."""
    return _capped([_PACKAGE_DRIFT[kind].format(name=name, was=was, now=now)
                    for name, kind, was, now in engine_artifact.lock_changes(recorded, current)], "package")


def model_file_drift(recorded, current):
    """One sentence per model file added, missing or changed (size or mtime)."""
    sentences = []
    for rel in model_state.differences(recorded, current):
        kind = "added" if rel not in recorded else "missing" if rel not in current else "changed"
        sentences.append(f"model file {rel} {kind}")
    return _capped(sentences, "model file")


def _tree_drift(what, key, compare, recorded, current):
    """Drift of a recorded tree (``{"path", key}``): moved, missing, appeared, else ``compare(was, now)``."""
    before, after = (recorded or {}).get("path"), (current or {}).get("path")
    if before != after:
        return [_moved(what, before, after)]
    if current is None:
        return []
    was, now = recorded.get(key), current[key]
    if was is None or now is None:
        return [] if was is now else [f"{what} {after} {'missing' if now is None else 'appeared'}"]
    return compare(was, now)


def venv_drift(recorded, current):
    return _tree_drift("engine virtualenv", "distributions", package_drift, recorded, current)


def model_drift(recorded, current):
    return _tree_drift("model directory", "files", model_file_drift, recorded, current)


def drift(recorded, current):
    """Sentences naming what differs between the stored record and the one read now (empty: none)."""
    sentences = []
    if recorded.get("fingerprint") != current["fingerprint"]:
        sentences.append("fingerprint changed")
    sentences += file_drift(recorded.get("files"), current["files"])
    sentences += venv_drift(recorded.get("venv"), current["venv"])
    sentences += model_drift(recorded.get("model"), current["model"])
    if (recorded.get("service") or "") != current["service"]:
        sentences.append(_moved("unit", recorded.get("service"), current["service"]))
    return sentences


def unit_drift(service, rc, out, err):
    """Why the unit is not running, from ``systemctl is-active`` (None when it is active)."""
    state = (out or "").strip() or (err or "").strip() or f"unknown (systemctl is-active exited {rc})"
    if rc == 0 and state == "active":
        return None
    if state in ("inactive", "failed"):
        return f"unit {service} stopped ({state})"
    return f"unit {service} is {state}, not active"


def endpoint_drift(result, model, url):
    """Why ``GET <url>/v1/models`` (an HttpResult) does not list ``model`` (None when it does)."""
    try:
        vllm_http.check_models(result, model, url)
    except vllm_http.VllmNotReady as exc:
        return f"endpoint does not answer: {exc.msg}"
    return None


def checked(record, url=None):
    """What a check compares, one short phrase each (for the play's output)."""
    items = ["fingerprint"]
    if record["files"]:
        items.append(f"{len(record['files'])} files")
    if record["venv"]:
        dists = record["venv"]["distributions"]
        items.append(f"engine virtualenv {record['venv']['path']} ({len(dists or {})} packages)")
    if record["model"]:
        files = record["model"]["files"]
        items.append(f"model directory {record['model']['path']} ({len(files or {})} files)")
    if record["service"]:
        items.append(f"unit {record['service']}")
    if url:
        items.append(f"endpoint {url}")
    return items


def write_private(path, text):
    """Replace ``path`` with ``text``, mode 0600 (owned by root when run as root), atomically.

    The content goes to a temporary file created exclusively beside ``path``
    and is renamed over it, so a reader sees the old record or the new one,
    never a part.  A missing parent directory is created, mode 0700.
    """
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, mode=DIR_MODE, exist_ok=True)
    tmp = os.path.join(directory, f".{os.path.basename(path)}.{os.getpid()}.tmp")
    if os.path.lexists(tmp):
        os.unlink(tmp)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, RECORD_MODE)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            if os.geteuid() == 0:
                os.fchown(handle.fileno(), 0, 0)
            os.fchmod(handle.fileno(), RECORD_MODE)
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.rename(tmp, path)
    except BaseException:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        raise


def needs_write(path, old_text, new_text):
    """Does the record file differ from ``new_text`` in content, mode or (as root) owner?"""
    if old_text != new_text:
        return True
    info = os.lstat(path)
    if info.st_mode & 0o7777 != RECORD_MODE:
        return True
    return os.geteuid() == 0 and (info.st_uid, info.st_gid) != (0, 0)
