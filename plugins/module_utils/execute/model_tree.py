# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""Where root may write a model tree, and how it takes one over.

Root writes model trees (the controller copy, downloads, archive unpacks) into
``<model>.partial`` and renames them into place.  Whoever can write a
directory on the way there can rename root's staging directory away or plant
``<model>.partial`` as a symlink, and root's writes, chown and chmod then land
where that account chose (``/etc``).  So:

- every directory from ``/`` down to the model directory's parent must be
  writable by root (or the account running the module) only:
  :func:`unsafe_ancestors`;
- the staging directory and the model directory are refused when they are
  symlinks: :func:`link_problem`;
- a tree an earlier release gave to the service account, and a download, is
  given to root and the service group, walking directory descriptors and
  never following a symlink (:func:`take_tree`); the engine only reads its
  weights.
"""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

import os
import stat

# Directories of a model tree: the owner's, and read/enter for the service group.
DIR_MODE = 0o750


def file_mode(mode):
    """A file's permission bits in a taken tree: the owner's, read (and execute where set) for the group, none for
    other, no setuid, setgid or sticky bit."""
    return (stat.S_IMODE(mode) & 0o710) | 0o040


def writable_by_others(st, uid, sticky_ok=False):
    """Why an account other than root and ``uid`` can rename or create entries in the directory ``st`` (None: none can).

    ``sticky_ok``: a sticky directory (``/tmp``) above the parent is safe, as
    no other account can rename or remove the root-owned entry below it (it
    is checked in turn); the parent itself must not be, as another account
    could create ``<model>.partial`` there first.
    """
    if st.st_uid not in (0, uid):
        return f"it belongs to uid {st.st_uid}"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not (sticky_ok and st.st_mode & stat.S_ISVTX):
        return f"its mode {stat.S_IMODE(st.st_mode):04o} lets its group or others write it"
    return None


def ancestors(path, top="/"):
    """The existing directories from ``path``'s parent up to ``top``, nearest first (``path`` made absolute)."""
    path, top = os.path.abspath(path), os.path.abspath(top)
    found = []
    while path != top:
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
        if os.path.lexists(path):
            found.append(path)
    return found


def unsafe_ancestors(path, uid=None, lstat=os.lstat, top="/"):
    """``[(directory, why)]`` for the directories above ``path`` that another account could rewrite ([] when none).

    A symlink on the way counts when another account owns it: its target is where the writes go.
    """
    uid = os.geteuid() if uid is None else uid
    found = _unsafe_on_the_way(path, uid, lstat, top)
    # Where root's links on the way lead (base_model_dir -> /data/models): those directories count too.
    resolved = os.path.join(os.path.realpath(os.path.dirname(os.path.abspath(path))), os.path.basename(path))
    if resolved != os.path.abspath(path) and not found:
        found = _unsafe_on_the_way(resolved, uid, lstat, top)
    return found


def _unsafe_on_the_way(path, uid, lstat, top):
    found = []
    parent = os.path.dirname(os.path.abspath(path))
    for directory in ancestors(path, top):
        st = lstat(directory)
        if stat.S_ISLNK(st.st_mode):
            # The system's own links (/var/run -> /run, a merged /usr) belong to root: follow them only then.
            if st.st_uid not in (0, uid):
                found.append((directory, f"it is a symlink that uid {st.st_uid} owns"))
            continue
        why = writable_by_others(st, uid, sticky_ok=directory != parent)
        if why:
            found.append((directory, why))
    return found


def ancestors_message(variable, path, unsafe):
    shown = "; ".join(f"{directory}: {why}" for directory, why in unsafe)
    return (f"{variable}: root writes the model below {os.path.dirname(os.path.abspath(path))}, but another account "
            f"can rename or plant entries on the way ({shown}); it could redirect root's writes (a "
            f"'{os.path.basename(path)}.partial' symlink). Nothing was changed. Make those directories root's and "
            "not writable by group or others (the base role does so for base_model_dir and base_service_home), or "
            f"point {variable} elsewhere.")


def link_problem(path, what, lstat=os.lstat):
    """Why ``path`` may not be written through (a symlink); None when it is absent or no symlink."""
    try:
        st = lstat(path)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(st.st_mode):
        return (f"{what} {path} is a symlink (to {os.readlink(path)!r}): root does not write through it. Nothing was "
                "changed. Remove it (an account that could write its parent left it) and run again.")
    return None


def take_tree(path, gid, drop_links=False, uid=0):
    """Give the tree ``path`` to ``uid`` (root) and group ``gid``: directories 0750, files :func:`file_mode`.

    Walks directory descriptors from the top, each directory taken before it
    is listed, so an account that could write it before loses that right
    before its entries are read; a symlink is changed itself (lchown), never
    followed, and with ``drop_links`` removed when it leads out of the tree or
    to nothing (a download writes into the tree by path and would follow it;
    it fetches that file again).  A link inside the tree (an archive's
    ``tokenizer.json -> blobs/tok``) stays.  A fifo or
    device node (no model holds one) is removed, never opened.  ``path``
    itself must not be a symlink (ELOOP).  Returns ``(changed, dropped)``:
    how many entries changed, and the removed entries (relative paths).
    """
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        return _take_dir(fd, "", (uid, gid), drop_links, flags, path)
    finally:
        os.close(fd)


def linked_elsewhere(st):
    """Is the file ``st`` root's and hard-linked (it may be a system file linked into the tree)?  It is left as it is.

    A hard-linked file of another account is taken: with ``fs.protected_hardlinks`` (on by default on every
    supported system) an account links only files it owns or may write.
    """
    return st.st_nlink > 1 and st.st_uid == 0


def _take(fd, mode, owner):
    st = os.fstat(fd)
    changed = 0
    if (st.st_uid, st.st_gid) != owner:
        os.fchown(fd, *owner)
        changed = 1
    if stat.S_IMODE(st.st_mode) != mode:
        os.fchmod(fd, mode)
        changed = 1
    return changed


def leads_out(top, rel):
    """Does the symlink ``rel`` of the tree ``top`` lead out of it (or to nothing inside it)?

    Resolved by path: by now every directory of the tree and above it is root's.
    """
    root = os.path.realpath(top)
    target = os.path.realpath(os.path.join(root, rel))
    return os.path.commonpath([root, target]) != root or not os.path.lexists(target)


def _take_dir(fd, rel, owner, drop_links, flags, top):
    changed, dropped = _take(fd, DIR_MODE, owner), []  # before its entries are read
    for name in sorted(os.listdir(fd)):
        st = os.lstat(name, dir_fd=fd)
        child = f"{rel}/{name}" if rel else name
        if stat.S_ISLNK(st.st_mode):
            if drop_links and leads_out(top, child):
                os.unlink(name, dir_fd=fd)
                dropped.append(child)
                changed += 1
            elif (st.st_uid, st.st_gid) != owner:
                os.chown(name, *owner, dir_fd=fd, follow_symlinks=False)
                changed += 1
        elif stat.S_ISDIR(st.st_mode):
            sub = os.open(name, flags, dir_fd=fd)
            try:
                more, links = _take_dir(sub, child, owner, drop_links, flags, top)
            finally:
                os.close(sub)
            changed, dropped = changed + more, dropped + links
        elif stat.S_ISREG(st.st_mode):
            sub = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0), dir_fd=fd)
            try:
                st = os.fstat(sub)  # the entry opened is the entry changed
                if stat.S_ISREG(st.st_mode) and not linked_elsewhere(st):
                    changed += _take(sub, file_mode(st.st_mode), owner)
            finally:
                os.close(sub)
        else:
            os.unlink(name, dir_fd=fd)
            dropped.append(child)
            changed += 1
    return changed, dropped
