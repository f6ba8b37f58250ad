#!/usr/bin/python
# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

DOCUMENTATION = r"""
---
module: vllm_copy
short_description: Copy a file or folder from the controller and report the progress of a long copy
version_added: "0.3.0"
description:
  - M(ansible.builtin.copy) with a progress line every O(progress_interval) seconds while it works on a file (its
    checksum, the transfer, the remote copy) - what is copied, from where, bytes read of the total and the elapsed time.
    A copy through the connection cannot run as an async job, so this is how a model folder or a wheelhouse or image
    archive of tens of GB shows that it moves.
  - The progress line is printed on the controller (in C(ansible-playbook) output and, in AWX, as a C(verbose) job event);
    the bytes read are measured from C(/proc) on a Linux controller, elsewhere the line gives the elapsed time only.
  - Everything else is M(ansible.builtin.copy) (its action plugin runs the copy); only the options below are accepted.
author:
  - kunpeng.vllm maintainers (@kunpeng-vllm)
options:
  src:
    description: File or folder on the controller (a folder ending in C(/) copies its contents).
    type: path
    required: true
  dest:
    description: Path on the node.
    type: path
    required: true
  owner:
    description: Owner of the copied files.
    type: str
  group:
    description: Group of the copied files.
    type: str
  mode:
    description: Mode of the copied files.
    type: raw
  directory_mode:
    description: Mode of the folders a recursive copy creates.
    type: raw
  what:
    description: What the copy is, for the progress line (V(model copy), V(wheelhouse push)).
    type: str
    required: true
  source:
    description: Where it comes from, for the progress line; O(src) when omitted.
    type: str
  progress_interval:
    description: Seconds between two progress lines.
    type: int
    default: 15
  stall_timeout:
    description:
      - Seconds the read position of a file being sent may stay still; then the process that sends it (the
        connection's C(sftp) or C(scp)) is stopped and the task fails with a message that names O(source). C(0) never
        stops it.
      - A read inside the worker itself (the local connection, the checksum) is reported but cannot be stopped.
    type: int
    default: 600
attributes:
  action:
    description: Runs an action plugin of the same name on the controller.
    support: full
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
    details: As M(ansible.builtin.copy).
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: full
    details: As M(ansible.builtin.copy).
"""

EXAMPLES = r"""
- name: Push the image archive to the node
  kunpeng.vllm.vllm_copy:
    src: /srv/images/vllm-ascend.tar
    dest: /var/lib/vllm/images/vllm-ascend.tar
    owner: root
    group: root
    mode: "0600"
    what: image archive push
    progress_interval: 15
"""

RETURN = r"""
dest:
  description: As M(ansible.builtin.copy).
  returned: success
  type: str
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402


def main():
    module = AnsibleModule(
        argument_spec=dict(
            src=dict(type="path", required=True),
            dest=dict(type="path", required=True),
            owner=dict(type="str"),
            group=dict(type="str"),
            mode=dict(type="raw"),
            directory_mode=dict(type="raw"),
            what=dict(type="str", required=True),
            source=dict(type="str"),
            progress_interval=dict(type="int", default=15),
            stall_timeout=dict(type="int", default=600),
        ),
        supports_check_mode=True,
    )
    module.fail_json(msg="kunpeng.vllm.vllm_copy runs through its action plugin, which runs ansible.builtin.copy")


if __name__ == "__main__":
    main()
