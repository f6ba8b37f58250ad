# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""Unpack an engine artifact as root without trusting what is inside it.

``tar -xf`` run as root keeps setuid bits, device nodes and the archive's
owners, writes through a symlink an earlier member planted, and reads the
archive again after its hash was checked.  :func:`extract` reads the tar
stream once, from the open file the caller hashes as it goes, and writes:

- regular files (permission bits only: no setuid, setgid or sticky bit, no
  write bit for group or other), directories, and hard links to a file it
  already wrote, reached without passing a symlink;
- symlinks whose target stays inside the tree, plus, for an engine
  virtualenv only (``interpreter_links``), the one kind it needs outside it:
  ``bin/python*`` naming an absolute ``.../python*`` interpreter path;
- every entry owned by the extracting user (root), never the archive's uid;
- nothing through a symlink: a member below a symlink member is refused,
  files are opened with ``O_NOFOLLOW``.

Anything else (device nodes, fifos, absolute or ``..`` names, a link out of
the tree) raises :class:`Refused`, naming the member; the caller removes the
partial tree.  So does an archive that expands past its :class:`Budget`
(total bytes of regular files, or members): each member's size is counted
from its header before any of it is written, so a zero-filled member that
compresses a thousandfold, or a header claiming a terabyte, stops the
extraction at the budget, not at a full disk.
"""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

import hashlib
import itertools
import os
import re
import shutil
import stat
import subprocess
import tarfile
import tempfile
import threading

from ansible_collections.kunpeng.vllm.plugins.module_utils.execute import model_tree

CHUNK = 1 << 20
_INTERPRETER_LINK = re.compile(r"^bin/python[0-9.]*$")
# What such a link may name: an interpreter, never a directory (a hard link or
# a write through bin/python3 -> /etc would reach the host's files).
_INTERPRETER_TARGET = re.compile(r"^(/[A-Za-z0-9._+-]+)*/python[0-9.]*$")
# Permission bits kept: the owner's, and read/execute for group and other.
_MODE_KEPT = 0o755


# Default budget.  The archive's own size is the one size every caller knows (a sha256 pin says nothing about it):
# zstd and gzip shrink a virtualenv or a model three to five times, never twenty, while a zero-filled member shrinks
# a thousandfold.  The floor keeps small archives (a tokenizer-only model, a CPU wheelhouse) clear of the ratio.
EXPANSION_RATIO = 20
EXPANSION_FLOOR = 1 << 30
# A CUDA engine virtualenv (torch, vllm, triton, the nvidia-* wheels) holds about 100,000 files; a model a few dozen.
MAX_MEMBERS = 250_000


class Refused(Exception):
    """A member the extraction will not write."""


# The longest GNU long name/link or PAX header read: a path is at most PATH_MAX (4096) bytes, and a PAX header holds
# a few such records; tarfile reads the whole header into memory before it returns the member it describes.
MAX_HEADER_BYTES = 1 << 20
_NAME_HEADERS = (tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK, tarfile.XHDTYPE, tarfile.XGLTYPE,
                 tarfile.SOLARIS_XHDTYPE)


class _BoundedTarInfo(tarfile.TarInfo):
    """A tar header whose long-name or PAX extension is refused past :data:`MAX_HEADER_BYTES`, before it is read.

    Such a header is no member: the extraction's :class:`Budget` never sees it, and a 4 MB gzip can claim a 4 GiB
    one, which tarfile would read into memory whole (as root, before a digest is compared).
    """

    def _proc_member(self, tarfile):  # pylint: disable=redefined-outer-name  # (the name of the method it overrides)
        if self.type in _NAME_HEADERS and self.size > MAX_HEADER_BYTES:
            raise Refused(f"a tar extension header claims {self.size} bytes, past {MAX_HEADER_BYTES} (a name or PAX "
                          "header is a few KiB); nothing more was written")
        return super()._proc_member(tarfile)


class Budget:
    """What one extraction may write: ``max_bytes`` of regular files in all and ``max_members`` entries.

    ``advice`` names the option that raises it, for the refusal message.
    """

    def __init__(self, max_bytes, max_members=MAX_MEMBERS, advice=""):
        self.max_bytes, self.max_members, self.advice = int(max_bytes), int(max_members), advice
        self.bytes = self.members = 0

    @classmethod
    def for_archive(cls, archive_size, max_bytes=0, max_members=0, advice=""):
        """The budget of an archive of ``archive_size`` bytes: ``max_bytes``/``max_members`` when set (non-zero),
        else :data:`EXPANSION_RATIO` times its size (at least :data:`EXPANSION_FLOOR`) and :data:`MAX_MEMBERS`."""
        derived = max(EXPANSION_RATIO * int(archive_size or 0), EXPANSION_FLOOR)
        return cls(max_bytes or derived, max_members or MAX_MEMBERS, advice)

    def _refuse(self, what):
        raise Refused(f"{what}; nothing more was written" + (f" (raise {self.advice} if the archive is trusted)"
                                                             if self.advice else ""))

    def charge(self, name, size):
        """Count member ``name`` of ``size`` bytes, before it is written; Refused past the budget."""
        self.members += 1
        if self.members > self.max_members:
            self._refuse(f"the archive holds more than {self.max_members} members ({name!r} is one more)")
        self.bytes += size
        if self.bytes > self.max_bytes:
            self._refuse(f"the archive expands past {self.max_bytes} bytes ({name!r} claims {size} bytes, "
                         f"{self.bytes} in all)")


class HashingReader:
    """A file object that hashes every byte read through it (the same bytes tar sees)."""

    def __init__(self, handle):
        self._handle, self.sha256 = handle, hashlib.sha256()

    def read(self, size=-1):
        data = self._handle.read(size)
        self.sha256.update(data)
        return data

    def drain(self):
        """Hash what tar left unread (its end-of-archive padding)."""
        while self.read(CHUNK):
            pass
        return self.sha256.hexdigest()


def member_name(name):
    """The member's path relative to the tree, normalised; Refused when it is absolute or climbs out."""
    if name.startswith("/") or "\0" in name:
        raise Refused(f"{name!r} is an absolute path")
    parts = [part for part in name.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise Refused(f"{name!r} climbs out of the tree ('..')")
    return "/".join(parts)


def link_problem(name, target, interpreter_links=False):
    """Why a symlink ``name`` -> ``target`` may not be written (None: it may).

    ``interpreter_links``: the tree is an engine virtualenv, whose
    ``bin/python*`` names the host's interpreter by its absolute path.
    """
    if target.startswith("/"):
        interpreter = bool(_INTERPRETER_LINK.match(name) and _INTERPRETER_TARGET.match(target))
        if interpreter_links and interpreter and not {".", ".."} & set(target.split("/")):
            return None
        return f"{name!r} links to {target!r}, outside the tree"
    parts = [part for part in target.split("/") if part not in ("", ".")]
    climbs = len(parts) - len(list(itertools.dropwhile(lambda part: part == "..", parts)))
    if ".." in parts[climbs:]:
        # 'c/..' is the parent of wherever the symlink c points, not the directory holding c.
        return f"{name!r} links to {target!r}, which climbs ('..') after descending"
    if climbs > name.count("/"):
        return f"{name!r} links to {target!r}, outside the tree"
    return None


def _open_new(path, mode):
    if os.path.lexists(path):
        if os.path.isdir(path) and not os.path.islink(path):
            raise Refused(f"{path!r} is a directory in the archive and a file later")
        os.unlink(path)
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)


def write_new_file(path, data, mode=0o644):
    """Write ``data`` to ``path`` as a new regular file: an entry already there (a planted symlink) is replaced."""
    fd = _open_new(path, mode)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def _below_link(name, links):
    """The symlink member ``name`` lies below (None: it lies below none)."""
    parents = name.split("/")[:-1]
    for depth in range(1, len(parents) + 1):
        if "/".join(parents[:depth]) in links:
            return "/".join(parents[:depth])
    return None


def _inside(path, dest):
    root = os.path.realpath(dest)
    return os.path.commonpath([root, os.path.realpath(path)]) == root


def extract(stream, dest, interpreter_links=False, compressed=False, budget=None):
    """Unpack the tar ``stream`` (a file object read once, in order) into the existing directory ``dest``.

    ``interpreter_links``: allow ``bin/python*`` symlinks to an absolute
    interpreter (an engine virtualenv; see :func:`link_problem`).
    ``compressed``: the stream may be gzip, bzip2 or xz (tarfile reads
    those itself).  ``budget``: a :class:`Budget` (default: that of a
    zero-byte archive, :data:`EXPANSION_FLOOR` and :data:`MAX_MEMBERS`).
    Returns the number of members written.  Raises :class:`Refused` on the
    first member it will not write (the caller removes ``dest``).
    """
    links, dirs, count = set(), {}, 0
    budget = budget or Budget.for_archive(0)
    with tarfile.open(fileobj=stream, mode="r|*" if compressed else "r|", tarinfo=_BoundedTarInfo) as archive:
        for member in archive:
            name = member_name(member.name)
            if not name:
                continue
            # Before anything of it is written; a hard link or symlink adds an entry, not bytes.
            budget.charge(member.name, member.size if member.isreg() else 0)
            parents = name.split("/")[:-1]
            link = _below_link(name, links)
            if link:
                raise Refused(f"{member.name!r} lies below the symlink {link!r}")
            path = os.path.join(dest, name)
            if parents:
                os.makedirs(os.path.join(dest, *parents), mode=0o755, exist_ok=True)
            mode = member.mode & _MODE_KEPT
            if member.isdir():
                if os.path.islink(path):
                    raise Refused(f"{member.name!r} is a symlink in the archive and a directory later")
                os.makedirs(path, mode=0o700, exist_ok=True)
                dirs[path] = (mode, member.mtime)
            elif member.isreg():
                source = archive.extractfile(member)
                fd = _open_new(path, 0o600)
                with os.fdopen(fd, "wb") as handle:
                    shutil.copyfileobj(source, handle, CHUNK)
                    handle.flush()  # before the times: a later flush would set mtime to now
                    os.fchmod(handle.fileno(), mode)
                    os.utime(handle.fileno(), (member.mtime, member.mtime))
                links.discard(name)
            elif member.issym():
                problem = link_problem(name, member.linkname, interpreter_links)
                if problem:
                    raise Refused(problem)
                if os.path.lexists(path):
                    os.unlink(path)
                os.symlink(member.linkname, path)
                links.add(name)
            elif member.islnk():
                target = member_name(member.linkname)
                source = os.path.join(dest, target)
                # Through no symlink, not even an allowed one (bin/python3 -> /usr/bin/python3.11): a link to
                # bin/python3/../x or through a directory link would name a file of the host.
                through_link = target in links or _below_link(target, links) or os.path.islink(source)
                if through_link or not os.path.isfile(source) or not _inside(source, dest):
                    raise Refused(f"{member.name!r} is a hard link to {member.linkname!r}, not a file of the tree")
                if os.path.lexists(path):
                    os.unlink(path)
                os.link(source, path, follow_symlinks=False)
            else:
                raise Refused(f"{member.name!r} is a {_kind(member)}, which an engine virtualenv never holds")
            count += 1
    # Directory modes and times last: a 0555 directory must not stop the writes below it.
    # Through the directory's own descriptor, opened without following a symlink: a directory swapped for a link
    # after it was written is refused, never the link's target changed.
    for path, (mode, mtime) in sorted(dirs.items(), reverse=True):
        set_dir_mode(path, mode | stat.S_IRUSR | stat.S_IXUSR, mtime)
    return count


def set_dir_mode(path, mode, mtime=None):
    """chmod (and utime) the directory ``path`` itself: Refused when it is no longer a directory (a symlink now)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except OSError as error:
        raise Refused(f"{path!r} is no longer the directory the archive made ({error.strerror}); it was changed "
                      "during the extraction") from None
    try:
        os.fchmod(fd, mode)
        if mtime is not None:
            os.utime(fd, (mtime, mtime))
    finally:
        os.close(fd)


def _kind(member):
    if member.ischr() or member.isblk():
        return "device node"
    if member.isfifo():
        return "fifo"
    return "special member"


def _size_of(handle):
    try:
        return os.fstat(handle.fileno()).st_size
    except (AttributeError, OSError, ValueError):  # no file behind it (a test's BytesIO)
        return 0


def extract_checked(handle, dest, zstd=None, interpreter_links=False, compressed=False, budget=None):
    """Extract the archive open as ``handle`` into ``dest``, hashing exactly the bytes extracted.

    ``zstd``: path of the zstd binary when the archive is zstd-compressed
    (the compressed bytes are hashed, as the sidecar's sha256 is of the
    file); ``interpreter_links`` and ``compressed``: see :func:`extract`.
    ``budget``: a :class:`Budget`, by default :meth:`Budget.for_archive` of
    the size of the file open as ``handle``.  Returns ``(sha256, members)``; the caller compares the digest before it
    moves ``dest`` into place.
    """
    budget = budget or Budget.for_archive(_size_of(handle))
    reader = HashingReader(handle)
    if zstd is None:
        count = extract(reader, dest, interpreter_links, compressed, budget)
        return reader.drain(), count
    # A pipe both ways: the tar reader consumes zstd's output while the archive is still fed in, which run_command
    # (it returns when the process has ended) cannot do.
    # pylint: disable-next=ansible-bad-function
    proc = subprocess.Popen([zstd, "-dc"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    failure = []

    def pump():
        try:
            for block in iter(lambda: reader.read(CHUNK), b""):
                proc.stdin.write(block)
        except OSError as error:  # zstd stopped reading (it failed, or the extraction was refused)
            failure.append(error)
        finally:
            try:
                proc.stdin.close()
            except OSError:
                pass

    thread = threading.Thread(target=pump, daemon=True)
    thread.start()
    try:
        count = extract(proc.stdout, dest, interpreter_links, budget=budget)
        while proc.stdout.read(CHUNK):
            pass
    finally:
        # Closed whatever the feeding thread is doing: after a refusal zstd may
        # have read all its input and wait to write output no one reads any more.
        proc.stdout.close()
        thread.join()
        rc = proc.wait()
    if rc != 0 or failure:
        raise Refused(f"zstd could not decompress the archive (exit status {rc})")
    return reader.drain(), count


# Archive names a model URL may end in, and whether zstd reads them (tarfile reads the others itself).
_ARCHIVE_SUFFIXES = ((".tar.zst", True), (".tzst", True), (".tar", False), (".tar.gz", False), (".tgz", False),
                     (".tar.bz2", False), (".tbz2", False), (".tar.xz", False), (".txz", False))


def needs_zstd(name):
    """Whether the archive ``name`` (a file name or URL) is zstd-compressed; ValueError when it is no tar archive."""
    path = str(name).split("?", 1)[0].split("#", 1)[0].lower()
    for suffix, zstd in _ARCHIVE_SUFFIXES:
        if path.endswith(suffix):
            return zstd
    raise ValueError(f"{name!r} is not a tar archive (" + ", ".join(s for s, _z in _ARCHIVE_SUFFIXES) + ")")


def unpack_tree(archive, dest, sha256, zstd=None, budget=None):
    """Unpack the tar ``archive`` as the directory ``dest`` (what was there is replaced), checked against ``sha256``.

    The tree is written beside ``dest`` and renamed into place only when
    every member was accepted and the bytes read hash to ``sha256``; on any
    refusal nothing of it is left.  ``zstd``: the zstd binary when the
    archive is zstd-compressed (gzip, bzip2 and xz are read by tarfile).
    ``budget``: see :func:`extract_checked`.  Returns the number of members.
    """
    parent = os.path.dirname(dest.rstrip("/")) or "/"
    # The staging directory's name is random and its parent (and every directory above) writable by this account
    # only: another account could otherwise rename it away and put its own in its place, and the writes, chmods and
    # the rename below would follow its links.
    unsafe = model_tree.unsafe_ancestors(os.path.join(parent, "x"))
    if unsafe:
        reasons = "; ".join(f"{where}: {why}" for where, why in unsafe)
        raise Refused(f"{dest} is not unpacked: another account can rewrite the directories above it ({reasons})")
    staging = tempfile.mkdtemp(prefix=f".{os.path.basename(dest.rstrip('/'))}.", suffix=".unpack", dir=parent)
    try:
        with open(archive, "rb") as handle:
            found, count = extract_checked(handle, staging, zstd, compressed=zstd is None, budget=budget)
        if found != sha256:
            raise Refused(f"{archive} has sha256 {found}, not {sha256}: it changed after it was checked")
        set_dir_mode(staging, 0o750)
        if os.path.lexists(dest):
            if os.path.isdir(dest) and not os.path.islink(dest):
                shutil.rmtree(dest)
            else:
                os.unlink(dest)
        os.rename(staging, dest)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return count
