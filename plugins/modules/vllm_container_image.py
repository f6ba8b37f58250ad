#!/usr/bin/python
# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

DOCUMENTATION = r"""
---
module: vllm_container_image
short_description: Read an OCI image archive, or an image in a container runtime's store
version_added: "0.3.0"
description:
  - With O(archive), reads the archive C(docker save) or C(podman save) wrote (its manifest.json and the image
    config it names; the layers are skipped) and returns the image ID, architecture and labels. The vllm role
    runs it on the controller before anything changes, so an archive that does not fit the host is refused
    before it is pushed.
  - With O(runtime) and O(image), runs C(<runtime> image inspect) on the node and returns the same keys, with
    RV(present) false when the store does not hold the image.
  - Changes nothing.
author:
  - kunpeng.vllm maintainers (@kunpeng-vllm)
options:
  archive:
    description: Path of the image archive.
    type: path
  runtime:
    description: The runtime whose store is read.
    type: str
    choices: [podman, docker]
  image:
    description: Image ID or reference to inspect in the store of O(runtime).
    type: str
extends_documentation_fragment:
  - kunpeng.vllm.attributes.read_only
"""

EXAMPLES = r"""
- name: Read the image archive on the controller
  kunpeng.vllm.vllm_container_image:
    archive: /srv/images/vllm-ascend-v0.13.0.tar
  delegate_to: localhost
  register: image_archive

- name: Ask whether podman holds the image
  kunpeng.vllm.vllm_container_image:
    runtime: podman
    image: "{{ image_archive.id }}"
  register: image_loaded
"""

RETURN = r"""
present:
  description: Whether the archive or the store holds the image.
  returned: always
  type: bool
id:
  description: The image ID (the sha256 of its config).
  returned: when present
  type: str
  sample: sha256:7f86af6e747e6aa1ea70b9777a4f8172b205b64650723aaded68ea46d4085fd8
architecture:
  description: The image's OCI architecture.
  returned: when present
  type: str
  sample: amd64
labels:
  description: The image's labels.
  returned: when present
  type: dict
digest:
  description: The registry digest of an image from a registry; empty otherwise.
  returned: when inspected in a store
  type: str
repo_tags:
  description: The tags an archive names.
  returned: with archive
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import container  # noqa: E402


def main():
    module = AnsibleModule(
        argument_spec=dict(
            archive=dict(type="path"),
            runtime=dict(type="str", choices=["podman", "docker"]),
            image=dict(type="str"),
        ),
        required_one_of=[("archive", "image")],
        mutually_exclusive=[("archive", "image")],
        required_together=[("runtime", "image")],
        supports_check_mode=True,
    )
    p = module.params
    if p["archive"]:
        try:
            info = container.read_archive(p["archive"])
        except (OSError, KeyError, ValueError) as exc:
            module.fail_json(msg=f"vllm: {p['archive']} is not an image archive docker or podman saved: {exc}")
        module.exit_json(changed=False, present=True, **info)
    binary = module.get_bin_path(p["runtime"], required=True)
    rc, out, dummy = module.run_command([binary, "image", "inspect", p["image"]])
    info = container.inspected_image(out) if rc == 0 else {}
    module.exit_json(changed=False, present=bool(info), **info)


if __name__ == "__main__":
    main()
