# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""Files written into a folder that others may write: the shared engine artifact store, a cache.

Whoever can write such a folder can plant any name in it before the writer
comes: a symlink to a root-owned file, a hard link to one, a FIFO, a
directory.  The writer runs as root on the builder, and a symlink is resolved
there (NFS root_squash does not help), so nothing here opens a name that is
already in the folder for writing:

* every file is created new, under a random name (:func:`tempfile.mkstemp`:
  ``O_CREAT | O_EXCL | O_NOFOLLOW``, mode 0600), written through that
  descriptor, given its mode with ``fchmod`` and renamed onto its final name.
  ``rename`` replaces the entry at the final name (a symlink, a hard link, a
  file) and never writes through it; a real directory there is refused.
* a command's output (``tar -cf -``) is written to that descriptor and hashed
  as it goes: no fixed ``.partial`` or exit-status file in the folder.
* a file read back from the folder is opened with ``O_NOFOLLOW | O_NONBLOCK``
  and read only when it is a regular file (a planted FIFO does not hang it).
"""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

import contextlib
import hashlib
import os
import stat
import subprocess
import tempfile

CHUNK = 1 << 20


class Refused(Exception):
    """A name in the folder that a new file will not replace (a directory), or a command that failed."""


def read_regular(path):
    """The bytes of ``path`` when it is a regular file (not a symlink, FIFO, device, directory); else None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    with os.fdopen(fd, "rb") as handle:
        return handle.read()


def is_regular(path):
    """Is ``path`` itself a regular file (a symlink to one is not)?"""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _rename_onto(tmp, path):
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        info = None
    if info is not None and stat.S_ISDIR(info.st_mode):
        raise Refused(f"{path} is a directory, not a file this writes: something other than this module put it "
                      "there. Check who writes that folder, remove it and run again")
    # rename() replaces the entry (a symlink or hard link is replaced, its target untouched).
    os.rename(tmp, path)


@contextlib.contextmanager
def new_file(path, mode=0o644):
    """Yield a binary handle on a new file beside ``path``; when the block ends without an error the file gets
    ``mode`` (``fchmod``) and is renamed onto ``path``.  On an error the new file is removed and ``path`` kept."""
    directory, name = os.path.split(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".partial", dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            os.fchmod(handle.fileno(), mode)
        _rename_onto(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_file(path, data, mode=0o644):
    """Replace ``path`` with a new file holding ``data`` (bytes), see :func:`new_file`."""
    with new_file(path, mode) as handle:
        handle.write(data)


def write_output_of(argv, path, mode=0o644, env=None):
    """Run ``argv`` and write its standard output to a new file renamed onto ``path`` (see :func:`new_file`),
    hashing it as it is written (one pass over the bytes).  Returns ``(sha256, size)`` of the bytes written.  Raises :class:`Refused` when the
    command exits non-zero (its standard error in the message; ``path`` is then left as it was)."""
    sha, size = hashlib.sha256(), 0
    with tempfile.TemporaryFile() as errors, new_file(path, mode) as handle:
        # The output is streamed into the file and hashed on the way (a virtualenv archive of several GB):
        # AnsibleModule.run_command keeps it all in memory.
        # pylint: disable-next=ansible-bad-function
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=errors, env=env)
        try:
            for block in iter(lambda: process.stdout.read(CHUNK), b""):
                sha.update(block)
                handle.write(block)
                size += len(block)
        except BaseException:
            process.kill()
            raise
        finally:
            process.stdout.close()
            rc = process.wait()
        if rc != 0:
            errors.seek(0)
            message = errors.read().decode("utf-8", "replace").strip()
            raise Refused(f"{argv[0]} exited {rc}: {message}")
    return sha.hexdigest(), size
