# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""Do the package lists need a refresh before the next install?

apt's own ``cache_valid_time`` goes by the age of the lists directory (or
Ubuntu's update-success stamp), which says nothing once the lists were
deleted: container images and minimal installs run ``apt-get clean`` and
empty /var/lib/apt/lists, and an install then finds no package at all.  The
rule here, per package manager: refresh when no package list is present, when
asked to (a new source was just written), or when the last refresh is older
than the maximum age.  The last refresh is the newest of the refresh stamp
(written after each refresh this collection runs, the file Ubuntu's
update-notifier also touches) and the lists themselves: apt dates a list by
the archive's Last-Modified, so a list alone may look older than its
download, never younger.
"""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

# Package manager (ansible_facts.pkg_mgr) -> where its lists are, the stamp a
# refresh leaves, and the command that refreshes them.
MANAGERS = {
    "apt": {
        "lists": "/var/lib/apt/lists/*_Packages*",
        "stamp": "/var/lib/apt/periodic/update-success-stamp",
        "refresh": ["apt-get", "-q", "update"],
    },
    "dnf": {
        "lists": "/var/cache/dnf/*/repodata/repomd.xml",
        "stamp": "/var/cache/dnf/kunpeng-vllm-refresh-stamp",
        "refresh": ["dnf", "-q", "makecache", "--refresh"],
    },
}

# Runs the manager's refresh ("$@"), then touches the stamp ($0) only when it
# succeeded, so a failed refresh is retried on the next run.
_REFRESH_SCRIPT = '"$@" && mkdir -p "${0%/*}" && touch "$0"'


def refresh_decision(pkg_mgr, list_mtimes, stamp_mtime, now, max_age, force=False):
    """Whether to refresh the package lists: ``{"refresh", "reason", "age"}``.

    ``list_mtimes``: modification times of the lists found; ``stamp_mtime``:
    the refresh stamp's, or None; ``age``: seconds since the last refresh
    (None when nothing tells).
    """
    if pkg_mgr not in MANAGERS:
        return {"refresh": False, "age": None,
                "reason": f"no package-list rule for package manager {pkg_mgr!r}; its own install refreshes"}
    known = list(list_mtimes) + ([stamp_mtime] if stamp_mtime is not None else [])
    age = int(now - max(known)) if known else None
    if force:
        return {"refresh": True, "age": age, "reason": "a package source changed"}
    if not list_mtimes:
        return {"refresh": True, "age": age, "reason": f"no {pkg_mgr} package lists are present"}
    if age > max_age:
        return {"refresh": True, "age": age,
                "reason": f"the {pkg_mgr} package lists are {age} s old, more than {max_age} s"}
    return {"refresh": False, "age": age,
            "reason": f"the {pkg_mgr} package lists are {max(age, 0)} s old, at most {max_age} s"}


def refresh_command(pkg_mgr):
    """The argv that refreshes the lists and then touches the stamp; [] for an unknown manager."""
    if pkg_mgr not in MANAGERS:
        return []
    manager = MANAGERS[pkg_mgr]
    return ["sh", "-c", _REFRESH_SCRIPT, manager["stamp"]] + manager["refresh"]
