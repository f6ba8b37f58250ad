#!/usr/bin/python
# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

DOCUMENTATION = r"""
---
module: vllm_unarchive
short_description: Unpack a downloaded tar archive as root without trusting its members
version_added: "0.3.0"
description:
  - C(ansible.builtin.unarchive) runs GNU tar as root, which keeps device nodes, setuid bits and the archive's owners;
    a model archive from a URL is not trusted that far.
  - Unpacks O(src) as the directory O(dest) with the collection's filtering extractor
    (C(plugins/module_utils/execute/safe_extract.py)) - regular files with their permission bits less setuid,
    setgid, sticky and group/other write, directories, symlinks and hard links that stay inside the tree, every entry
    owned by root. A device node, fifo, absolute or C(..) name, or a link out of the tree is refused, naming the
    member, and nothing of the tree is left.
  - The bytes extracted are hashed as they are read and must match O(sha256); the tree is written beside O(dest) and
    renamed into place only then, replacing what O(dest) held.
  - An archive that expands past O(max_bytes) of regular files or holds more than O(max_members) members is refused
    before the member that crosses the budget is written (a zero-filled member compresses a thousandfold; a header
    may claim any size), and nothing of the tree is left.
  - Reads tar, tar.gz, tar.bz2 and tar.xz itself, and tar.zst through the C(zstd) binary; other formats (zip) are
    refused.
author:
  - kunpeng.vllm maintainers (@kunpeng-vllm)
options:
  src:
    description: The archive on the node.
    type: path
    required: true
  dest:
    description: The directory the archive becomes (replaced).
    type: path
    required: true
  sha256:
    description: The archive's SHA-256 (hexadecimal).
    type: str
    required: true
  name:
    description: The archive's original name or URL, whose suffix tells the compression (default O(src)).
    type: str
  max_bytes:
    description:
      - Most bytes of regular files the archive may expand to (C(vllm_unpack_max_bytes)).
      - C(0) is twenty times the archive's size, at least 1 GiB (compression shrinks weights and code three to five
        times, never twenty).
    type: int
    default: 0
  max_members:
    description: Most members the archive may hold (C(vllm_unpack_max_members)); C(0) is 250000.
    type: int
    default: 0
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
    details: Reports a change and writes nothing.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: none
"""

EXAMPLES = r"""
- name: Unpack the model archive into the staging directory
  kunpeng.vllm.vllm_unarchive:
    src: /var/cache/vllm/deepseek.archive
    name: https://models.example.internal/deepseek-r1-distill-qwen-1.5b.tar.zst
    dest: /srv/models/deepseek.partial
    sha256: "{{ vllm_model_sha256 }}"
"""

RETURN = r"""
members:
  description: Members written (0 in check mode).
  returned: always
  type: int
  sample: 14
"""

import os  # noqa: E402
import tarfile  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.kunpeng.vllm.plugins.module_utils.execute import safe_extract  # noqa: E402

ADVICE = "vllm_unpack_max_bytes or vllm_unpack_max_members (max_bytes, max_members of kunpeng.vllm.vllm_unarchive)"


def main():
    module = AnsibleModule(
        argument_spec=dict(
            src=dict(type="path", required=True),
            dest=dict(type="path", required=True),
            sha256=dict(type="str", required=True),
            name=dict(type="str"),
            max_bytes=dict(type="int", default=0),
            max_members=dict(type="int", default=0),
        ),
        supports_check_mode=True,
    )
    p = module.params
    try:
        zstd = safe_extract.needs_zstd(p["name"] or p["src"])
    except ValueError as error:
        module.fail_json(msg=f"vllm_unarchive: {error}. Nothing was unpacked; publish the model as a tar archive.")
    zstd_bin = module.get_bin_path("zstd") if zstd else None
    if zstd and not zstd_bin:
        module.fail_json(msg=f"vllm_unarchive: {p['src']} is zstd-compressed but this host has no zstd. Install zstd "
                             "on it, or publish the model as .tar.gz.")
    if not os.path.isfile(p["src"]):
        module.fail_json(msg=f"vllm_unarchive: {p['src']} does not exist")
    if module.check_mode:
        module.exit_json(changed=True, members=0)
    try:
        budget = safe_extract.Budget.for_archive(os.path.getsize(p["src"]), p["max_bytes"], p["max_members"],
                                                 ADVICE)
        count = safe_extract.unpack_tree(p["src"], p["dest"], p["sha256"].strip().lower(), zstd_bin, budget)
    except (safe_extract.Refused, tarfile.TarError, OSError) as error:
        module.fail_json(msg=f"vllm_unarchive: unpacking {p['src']} was refused: {error}. Nothing was unpacked.")
    module.exit_json(changed=True, members=count)


if __name__ == "__main__":
    main()
