#!/usr/bin/python
# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

DOCUMENTATION = r"""
---
module: package_lists
short_description: Decide whether a host's package lists need a refresh before an install
version_added: "0.2.0"
description:
  - Looks for the package lists of the host's package manager (apt C(/var/lib/apt/lists/*_Packages*), dnf
    C(/var/cache/dnf/*/repodata/repomd.xml)) and the stamp the last refresh left, and decides whether to refresh.
  - Refresh when no list is present (images and minimal installs empty the lists; apt's C(cache_valid_time) goes by
    the lists directory and cannot tell), when O(force) is set (a package source was just written), or when the
    last refresh is more than O(max_age) seconds old. Otherwise nothing is refreshed, so a converged host skips it.
  - Returns the command that refreshes and then touches the stamp; the C(package_lists) entry point of the internal
    kunpeng.vllm._common role runs it when RV(refresh) is true. This module changes nothing.
author:
  - kunpeng.vllm maintainers (@kunpeng-vllm)
options:
  pkg_mgr:
    description:
      - The package manager, as C(ansible_facts.pkg_mgr) names it. One without a rule here is never refreshed.
    type: str
    required: true
  max_age:
    description:
      - Seconds a refresh stays valid.
    type: int
    default: 3600
  force:
    description:
      - Refresh whatever the age (a package source changed).
    type: bool
    default: false
extends_documentation_fragment:
  - kunpeng.vllm.attributes.read_only
"""

EXAMPLES = r"""
- name: Decide whether the package lists need a refresh
  kunpeng.vllm.package_lists:
    pkg_mgr: "{{ ansible_facts['pkg_mgr'] }}"
    max_age: 3600
  register: lists

- name: Refresh the package lists
  ansible.builtin.command:
    argv: "{{ lists.command }}"
  when: lists.refresh
  changed_when: false
"""

RETURN = r"""
refresh:
  description: Whether the package lists must be refreshed before the next install.
  returned: always
  type: bool
  sample: true
reason:
  description: Why, in one sentence.
  returned: always
  type: str
  sample: no apt package lists are present
age:
  description: Seconds since the last refresh (the newest of the stamp and the lists); null when none is present.
  returned: always
  type: int
  sample: 420
command:
  description: The argv that refreshes the lists and then touches the stamp; empty for a package manager without a rule.
  returned: always
  type: list
  elements: str
  sample: [sh, -c, '"$@" && mkdir -p "${0%/*}" && touch "$0"', /var/lib/apt/periodic/update-success-stamp, apt-get, -q, update]
"""

import glob  # noqa: E402
import os  # noqa: E402
import time  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.kunpeng.vllm.plugins.module_utils.execute.package_lists import (  # noqa: E402
    MANAGERS, refresh_command, refresh_decision)


def _mtime(path):
    try:
        return os.stat(path).st_mtime
    except OSError:
        return None


def main():
    module = AnsibleModule(
        argument_spec=dict(
            pkg_mgr=dict(type="str", required=True),
            max_age=dict(type="int", default=3600),
            force=dict(type="bool", default=False),
        ),
        supports_check_mode=True,
    )
    p = module.params
    manager = MANAGERS.get(p["pkg_mgr"], {})
    lists = [m for m in (_mtime(path) for path in glob.glob(manager["lists"])) if m is not None] if manager else []
    stamp = _mtime(manager["stamp"]) if manager else None
    decision = refresh_decision(p["pkg_mgr"], lists, stamp, time.time(), p["max_age"], p["force"])
    module.exit_json(changed=False, command=refresh_command(p["pkg_mgr"]), **decision)


if __name__ == "__main__":
    main()
