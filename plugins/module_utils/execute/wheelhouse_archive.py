# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""Push a wheelhouse folder as one archive instead of a file copy per wheel.

The controller packs the folder once into an uncompressed, deterministic tar
(wheels are zip files already: compressing again only costs time), cached
under the digest of the folder's listing (each file's relative name, size and
modification time).  The node unpacks it with
:func:`safe_extract.extract_checked` (one read, hashed as it goes, nothing
written through a link) and keeps the digest in a marker file, so a re-run
with the same wheelhouse copies nothing.

A ``uv`` wheel in the wheelhouse gives the node its installer: the binary is
taken out of the wheel (a zip) into the wheelhouse's ``.bin/`` folder, which
``--find-links`` does not read.
"""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

import hashlib
import json
import os
import re
import shutil
import stat
import tarfile
import tempfile
import zipfile

from ansible_collections.kunpeng.vllm.plugins.module_utils.execute import safe_extract
from ansible_collections.kunpeng.vllm.plugins.module_utils.execute import store_files

MARKER = ".kunpeng-wheelhouse.json"
UV_DIR = ".bin"
# A uv wheel's binary, e.g. uv-0.9.5.data/scripts/uv (uv's wheels are built
# by maturin with the binary as a script: github.com/astral-sh/uv pyproject.toml [tool.maturin] bindings = "bin").
_UV_MEMBER = re.compile(r"^uv-[^/]+\.data/scripts/uv$")
# uv-0.9.5-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl
_UV_WHEEL = re.compile(r"^uv-(?P<version>[^-]+)-py3-none-(?P<platforms>[^-]+)\.whl$")
_MANYLINUX = re.compile(r"^manylinux_(?P<major>\d+)_(?P<minor>\d+)_(?P<arch>.+)$")
_LEGACY = {"manylinux1": (2, 5), "manylinux2010": (2, 12), "manylinux2014": (2, 17)}


class ArchiveError(Exception):
    """The wheelhouse cannot be packed or unpacked (the message says why)."""


def listing(folder):
    """``[(relative name, size, mtime_ns)]`` of every regular file below ``folder``, sorted; a symlink is followed
    to a file only when that file lies inside ``folder`` (a link to ~/.ssh/id_rsa is not shipped to the nodes),
    other entries are skipped.  The marker and the uv folder of an unpacked wheelhouse are not part of it."""
    if not os.path.isdir(folder):
        raise ArchiveError(f"the wheelhouse {folder!r} is not a directory on the controller")
    out = []
    top = os.path.realpath(folder)
    for root, dirs, files in os.walk(folder):
        dirs.sort()
        rel_root = os.path.relpath(root, folder)
        if rel_root == "." and UV_DIR in dirs:
            dirs.remove(UV_DIR)
        for name in sorted(files):
            rel = name if rel_root == "." else f"{rel_root}/{name}"
            if rel == MARKER:
                continue
            path = os.path.join(root, name)
            if os.path.islink(path) and os.path.commonpath([top, os.path.realpath(path)]) != top:
                continue
            info = os.stat(path)
            if stat.S_ISREG(info.st_mode):
                out.append((rel, info.st_size, info.st_mtime_ns))
    return sorted(out)


def digest(entries):
    """The cache key and node marker of a listing: sha256 of its JSON (the first 16 hex digits)."""
    text = json.dumps([list(entry) for entry in entries], separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _tar_info(name, size, mode):
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = size, mode, 0
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def write_archive(folder, entries, path):
    """Write ``entries`` of ``folder`` to the tar ``path``: sorted, owner root, mode 0644, time 0 (the same
    folder gives the same bytes).  Returns the archive's sha256."""
    with open(path, "wb") as raw:
        with tarfile.open(fileobj=raw, mode="w", format=tarfile.GNU_FORMAT) as archive:
            made = set()
            for name, size, _mtime in entries:
                parts = name.split("/")[:-1]
                for depth in range(1, len(parts) + 1):
                    parent = "/".join(parts[:depth])
                    if parent not in made:
                        info = _tar_info(parent, 0, 0o755)
                        info.type = tarfile.DIRTYPE
                        archive.addfile(info)
                        made.add(parent)
                with open(os.path.join(folder, name), "rb") as handle:
                    if os.fstat(handle.fileno()).st_size != size:
                        raise ArchiveError(f"{name!r} changed while the wheelhouse was packed; pack it again")
                    archive.addfile(_tar_info(name, size, 0o644), handle)
    return _sha256_of(path)


def _sha256_of(path):
    sha = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(safe_extract.CHUNK), b""):
            sha.update(block)
    return sha.hexdigest()


CACHE_VARIABLE = "vllm_wheelhouse_cache_dir (cache_dir of kunpeng.vllm.vllm_wheelhouse)"


def cache_dir_problem(path, info, uid):
    """Why the cache folder ``path`` (its ``os.stat``) is not the packing user's (``uid``) alone; None when it is.

    :func:`pack` trusts an archive in the cache when it matches the sidecar beside it: whoever else can write the
    folder could replace both, so the folder must be this user's and writable by no group or other.
    """
    if not stat.S_ISDIR(info.st_mode):
        return f"{path} is not a folder. Set {CACHE_VARIABLE} to a folder"
    if info.st_uid != uid:
        return (f"{path} is owned by uid {info.st_uid}, not by the user that packs (uid {uid}): its owner could "
                f"replace a cached archive and its digest. Set {CACHE_VARIABLE} to a folder of that user")
    if info.st_mode & 0o022:
        return (f"{path} is writable by its group or others (mode {stat.S_IMODE(info.st_mode):04o}): they could "
                f"replace a cached archive and its digest. Run chmod go-w {path}, or set {CACHE_VARIABLE} to a "
                "folder only that user writes")
    return None


def pack(folder, cache_dir):
    """The cached archive of ``folder``, packed now when the cache has none for its digest.

    Returns ``{"archive", "name", "digest", "sha256", "files", "bytes", "packed"}``; ``packed`` is False when the
    cache held it.  The archive is written beside its final name and renamed (two hosts packing at once are safe).
    """
    entries = listing(folder)
    if not entries:
        raise ArchiveError(f"the wheelhouse {folder!r} holds no files")
    key = digest(entries)
    name = f"wheelhouse-{key}.tar"
    archive = os.path.join(cache_dir, name)
    sidecar = archive + ".json"
    result = {"archive": archive, "name": name, "digest": key, "files": len(entries),
              "bytes": sum(entry[1] for entry in entries), "packed": False}
    os.makedirs(cache_dir, mode=0o755, exist_ok=True)
    problem = cache_dir_problem(cache_dir, os.stat(cache_dir), os.geteuid())
    if problem:
        raise ArchiveError(f"the wheelhouse cache {problem}. Nothing was packed")
    if store_files.is_regular(archive):
        try:
            recorded = json.loads(store_files.read_regular(sidecar))["sha256"]
        except (ValueError, KeyError, TypeError):
            recorded = None
        # The archive's own hash, not the sidecar's word: a cached archive changed
        # since it was packed is packed again.
        if recorded is not None and _sha256_of(archive) == recorded:
            result["sha256"] = recorded
            return result
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", dir=cache_dir)
    os.close(fd)
    try:
        result["sha256"] = write_archive(folder, entries, tmp)
        os.chmod(tmp, 0o644)
        os.replace(tmp, archive)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    store_files.write_file(sidecar, json.dumps({"sha256": result["sha256"], "digest": key}).encode())
    result["packed"] = True
    return result


def read_marker(dest):
    """The digest the node's wheelhouse ``dest`` was unpacked from ('' when none: absent or not ours)."""
    try:
        with open(os.path.join(dest, MARKER)) as handle:
            return str(json.load(handle).get("digest", ""))
    except (OSError, ValueError, AttributeError):
        return ""


def _glibc_of(platform_tag):
    match = _MANYLINUX.match(platform_tag)
    if match:
        return (int(match.group("major")), int(match.group("minor"))), match.group("arch")
    for legacy, version in _LEGACY.items():
        if platform_tag.startswith(legacy + "_"):
            return version, platform_tag[len(legacy) + 1:]
    return None, None


def uv_wheel_for(names, arch, glibc):
    """The file name of the uv wheel among ``names`` the node can run (``arch``: x86_64 or aarch64; ``glibc``:
    the node's ``(major, minor)``), the newest uv first; '' when none fits.  Only manylinux wheels count: a
    musllinux uv is for another libc."""
    fits = []
    for name in names:
        match = _UV_WHEEL.match(name)
        if not match:
            continue
        for platform_tag in match.group("platforms").split("."):
            needs, tag_arch = _glibc_of(platform_tag)
            if needs is not None and tag_arch == arch and needs <= tuple(glibc):
                version = tuple(int(part) if part.isdigit() else 0 for part in match.group("version").split("."))
                fits.append((version, name))
                break
    return max(fits)[1] if fits else ""


def extract_uv(wheel, dest_dir):
    """Write the uv binary of the wheel file ``wheel`` to ``dest_dir``/uv (mode 0755); returns its path."""
    with zipfile.ZipFile(wheel) as archive:
        members = [info for info in archive.infolist() if _UV_MEMBER.match(info.filename)]
        if len(members) != 1:
            raise ArchiveError(f"{os.path.basename(wheel)} holds no uv binary (uv-*.data/scripts/uv)")
        # A new folder: one that exists (or a symlink of its name) is not written into.
        os.mkdir(dest_dir, mode=0o755)
        path = os.path.join(dest_dir, "uv")
        fd = safe_extract._open_new(path, 0o755)
        with os.fdopen(fd, "wb") as handle, archive.open(members[0]) as source:
            shutil.copyfileobj(source, handle, safe_extract.CHUNK)
    return path


def node_uv(dest, search_path=None):
    """The uv the node installs with: the one unpacked from the wheelhouse ``dest``, else uv on ``search_path``
    (the PATH when None), else ''."""
    own = os.path.join(dest, UV_DIR, "uv") if dest else ""
    if own and os.access(own, os.X_OK):
        return own
    return shutil.which("uv", path=search_path) or ""


def unpack(archive, dest, key, sha256, arch, glibc):
    """Unpack ``archive`` (checked against ``sha256``) as the wheelhouse ``dest``, replacing what was there.

    The tree is written beside ``dest`` and swapped in whole; the uv binary of a fitting uv wheel goes to
    ``dest``/.bin/uv; the marker (``key``) is written last.  Returns ``{"files", "uv_wheel"}``.
    """
    parent = os.path.dirname(dest.rstrip("/")) or "/"
    os.makedirs(parent, mode=0o755, exist_ok=True)
    staging = tempfile.mkdtemp(prefix=".wheelhouse.", dir=parent)
    try:
        with open(archive, "rb") as handle:
            found, count = safe_extract.extract_checked(handle, staging)
        if found != sha256:
            raise ArchiveError(f"{archive} has sha256 {found}, not the packed {sha256}: the copy is damaged")
        # pack never writes these: an archive that holds one (a .bin symlink to a
        # folder of the host) would have the uv binary written through it.
        planted = [name for name in (UV_DIR, MARKER) if os.path.lexists(os.path.join(staging, name))]
        if planted:
            raise ArchiveError(f"{archive} holds {', '.join(planted)}, which a packed wheelhouse never does")
        os.chmod(staging, 0o755)
        uv_wheel = uv_wheel_for(sorted(os.listdir(staging)), arch, glibc)
        if uv_wheel:
            extract_uv(os.path.join(staging, uv_wheel), os.path.join(staging, UV_DIR))
        safe_extract.write_new_file(os.path.join(staging, MARKER),
                                    json.dumps({"digest": key, "sha256": sha256, "files": count}).encode())
        old = None
        if os.path.lexists(dest):
            old = tempfile.mkdtemp(prefix=".wheelhouse-old.", dir=parent)
            os.rename(dest, os.path.join(old, "tree"))
        os.rename(staging, dest)
        if old:
            shutil.rmtree(old)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return {"files": count, "uv_wheel": uv_wheel}
