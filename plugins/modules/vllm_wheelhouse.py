#!/usr/bin/python
# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

DOCUMENTATION = r"""
---
module: vllm_wheelhouse
short_description: Pack a wheelhouse into one archive on the controller and unpack it on the node
version_added: "0.3.0"
description:
  - Pushing a wheelhouse of 150 wheels file by file costs a round trip per wheel; one archive costs one copy.
  - With O(action=pack) (on the controller), writes the folder O(src) as one uncompressed, deterministic tar into
    O(cache_dir), named by the digest of the folder's listing (each file's name, size and modification time). A
    cached archive for the same listing is used as it is. Writes only that cache, in check mode too, and reports no
    change.
  - With O(action=state) (on the node), says whether the wheelhouse O(dest) was unpacked from the archive of
    O(digest), and which uv the node installs with.
  - With O(action=unpack) (on the node), unpacks O(archive), checked against O(sha256), as O(dest), replacing what was
    there, without trusting the members (no links out of the tree, no device nodes, owner root); takes the uv binary
    out of a uv wheel that fits the node into C(dest/.bin/uv); writes the digest marker last.
  - The work is done by C(plugins/module_utils/execute/wheelhouse_archive.py).
author:
  - kunpeng.vllm maintainers (@kunpeng-vllm)
options:
  action:
    description: C(pack) on the controller; C(state) or C(unpack) on the node.
    type: str
    required: true
    choices: [pack, state, unpack]
  src:
    description: The wheelhouse folder on the controller (O(action=pack)).
    type: path
  cache_dir:
    description:
      - Where the controller keeps packed archives (O(action=pack)).
      - It must be owned by the user running the module and writable by no group or other (a cached archive is
        trusted when it matches the digest beside it); another folder is refused before anything is packed.
    type: path
  dest:
    description:
      - The wheelhouse folder on the node (O(action=state) and O(action=unpack)).
      - Omitted with O(action=state), only the uv on the node's PATH is looked up.
    type: path
  digest:
    description: The RV(digest) of the O(action=pack) call (O(action=state) and O(action=unpack)).
    type: str
  archive:
    description: The archive copied to the node (O(action=unpack)).
    type: path
  sha256:
    description: The RV(sha256) of the O(action=pack) call (O(action=unpack)).
    type: str
  remove_archive:
    description: Remove O(archive) once it is unpacked (O(action=unpack)).
    type: bool
    default: true
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
    details: O(action=unpack) reports the change and writes nothing; O(action=pack) writes the controller's cache.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: none
"""

EXAMPLES = r"""
- name: Pack the wheelhouse once on the controller
  kunpeng.vllm.vllm_wheelhouse:
    action: pack
    src: /srv/wheelhouse/cuda-x86_64
    cache_dir: ~/.cache/kunpeng.vllm/wheelhouse
  delegate_to: localhost
  register: packed

- name: Read the node's wheelhouse marker
  kunpeng.vllm.vllm_wheelhouse:
    action: state
    dest: /opt/vllm/wheelhouse
    digest: "{{ packed.digest }}"
  register: node_wheelhouse

- name: Unpack the copied archive
  kunpeng.vllm.vllm_wheelhouse:
    action: unpack
    archive: /opt/vllm/.artifacts/{{ packed.name }}
    dest: /opt/vllm/wheelhouse
    digest: "{{ packed.digest }}"
    sha256: "{{ packed.sha256 }}"
  when: not node_wheelhouse.current
"""

RETURN = r"""
archive:
  description: Path of the packed archive on the controller.
  returned: O(action=pack)
  type: str
  sample: /root/.cache/kunpeng.vllm/wheelhouse/wheelhouse-3f2a9c0d11e4b7a8.tar
name:
  description: File name of the archive.
  returned: O(action=pack)
  type: str
  sample: wheelhouse-3f2a9c0d11e4b7a8.tar
digest:
  description: Digest of the folder's listing; the node's marker holds it.
  returned: always
  type: str
  sample: 3f2a9c0d11e4b7a8
sha256:
  description: sha256 of the archive file.
  returned: O(action=pack)
  type: str
files:
  description: Files in the wheelhouse.
  returned: O(action=pack) and O(action=unpack)
  type: int
  sample: 154
bytes:
  description: Bytes of the wheelhouse's files.
  returned: O(action=pack)
  type: int
packed:
  description: Whether the archive was packed now (false when the cache held it).
  returned: O(action=pack)
  type: bool
current:
  description: Whether the node's wheelhouse was unpacked from the archive of O(digest).
  returned: O(action=state) and O(action=unpack)
  type: bool
uv:
  description: The uv binary the node installs with (the wheelhouse's, else one on PATH), or an empty string.
  returned: O(action=state) and O(action=unpack)
  type: str
  sample: /opt/vllm/wheelhouse/.bin/uv
uv_wheel:
  description: The uv wheel the binary came from, or an empty string.
  returned: O(action=unpack)
  type: str
"""

import os  # noqa: E402
import platform  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.kunpeng.vllm.plugins.module_utils.execute import safe_extract  # noqa: E402
from ansible_collections.kunpeng.vllm.plugins.module_utils.execute import wheelhouse_archive as wa  # noqa: E402

_REQUIRED = {"pack": ("src", "cache_dir"), "state": (),
             "unpack": ("archive", "dest", "digest", "sha256")}


def node_glibc():
    """The node's glibc as ``(major, minor)``; ``(0, 0)`` on another libc (no manylinux uv wheel fits)."""
    try:
        name, version = os.confstr("CS_GNU_LIBC_VERSION").split()
        return tuple(int(part) for part in version.split(".")[:2]) if name == "glibc" else (0, 0)
    except (AttributeError, ValueError, OSError):
        return (0, 0)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            action=dict(type="str", required=True, choices=["pack", "state", "unpack"]),
            src=dict(type="path"),
            cache_dir=dict(type="path"),
            dest=dict(type="path"),
            digest=dict(type="str"),
            archive=dict(type="path"),
            sha256=dict(type="str"),
            remove_archive=dict(type="bool", default=True),
        ),
        supports_check_mode=True,
    )
    params = module.params
    action = params["action"]
    missing = [name for name in _REQUIRED[action] if not params[name]]
    if missing:
        module.fail_json(msg=f"action={action} needs {', '.join(missing)}")
    try:
        if action == "pack":
            module.exit_json(changed=False, **wa.pack(params["src"], params["cache_dir"]))
        dest = (params["dest"] or "").rstrip("/")
        current = bool(dest and params["digest"]) and wa.read_marker(dest) == params["digest"]
        if action == "state" or current:
            module.exit_json(changed=False, digest=params["digest"], current=current, uv=wa.node_uv(dest), files=0,
                             uv_wheel="")
        if module.check_mode:
            module.exit_json(changed=True, digest=params["digest"], current=False, uv="", files=0, uv_wheel="")
        done = wa.unpack(params["archive"], dest, params["digest"], params["sha256"], platform.machine(),
                         node_glibc())
        if params["remove_archive"]:
            os.unlink(params["archive"])
        module.exit_json(changed=True, digest=params["digest"], current=True, uv=wa.node_uv(dest), **done)
    except (wa.ArchiveError, safe_extract.Refused, OSError) as error:
        module.fail_json(msg=f"vllm_wheelhouse {action}: {error}")


if __name__ == "__main__":
    main()
