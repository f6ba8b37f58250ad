#!/usr/bin/python
# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

DOCUMENTATION = r"""
---
module: vllm_container_prune
short_description: Remove the engine images of removed vLLM instances from a container runtime's store
version_added: "0.3.0"
description:
  - Lists the images of O(runtime)'s store (C(podman images --format json), C(docker images --no-trunc --digests
    --format '{{json .}}')), resolves the references in O(images) and O(in_use) to image IDs, and removes every image
    of O(images) that no reference of O(in_use) resolves to and no container uses (C(<runtime> rmi), never
    C(--force)).
  - The vllm role's entry point C(remove) calls it with what kunpeng.vllm.vllm_removal_plan returned in
    C(container_images). The decision is C(images_to_remove) in C(plugins/module_utils/execute/container_images.py).
author:
  - kunpeng.vllm maintainers (@kunpeng-vllm)
options:
  runtime:
    description: The runtime whose store holds the images.
    type: str
    required: true
    choices: [podman, docker]
  images:
    description: Image references (C(name@sha256:<digest>), tag or image ID) the removed instances used.
    type: list
    elements: str
    default: []
  in_use:
    description: References the instances that stay on the host use; an image one of them resolves to is kept.
    type: list
    elements: dict
    default: []
    suboptions:
      image:
        description: The reference.
        type: str
        required: true
      instance:
        description: The instance that uses it.
        type: str
        required: true
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
    details: Lists the store and returns what would be removed; removes nothing.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: none
  platform:
    description: Target OS/families that can be operated against.
    support: full
    platforms: posix
"""

EXAMPLES = r"""
- name: Remove the images the removed instances used
  kunpeng.vllm.vllm_container_prune:
    runtime: podman
    images: ["quay.io/ascend/vllm-ascend@sha256:3f1c5a0b2d9e8f7c6b5a4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a"]
    in_use:
      - image: sha256:7f86af6e747e6aa1ea70b9777a4f8172b205b64650723aaded68ea46d4085fd8
        instance: qwen3
"""

RETURN = r"""
removed:
  description: The images removed (in check mode, those that would be), each C(id), C(refs), C(tags) and C(argv).
  returned: always
  type: list
  elements: dict
kept:
  description: Images of O(images) kept, each C(id), C(refs) and C(why) (the instance or containers that use it).
  returned: always
  type: list
  elements: dict
absent:
  description: References of O(images) the store does not hold (removed earlier, or never pulled).
  returned: always
  type: list
  elements: str
msg:
  description: What was removed and what was kept, and why.
  returned: always
  type: str
  sample: "podman: removed sha256:7f86...; kept sha256:ab12... (instance qwen3 still uses it)."
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.kunpeng.vllm.plugins.module_utils.execute import container_images  # noqa: E402


def main():
    module = AnsibleModule(
        argument_spec=dict(
            runtime=dict(type="str", required=True, choices=["podman", "docker"]),
            images=dict(type="list", elements="str", default=[]),
            in_use=dict(type="list", elements="dict", default=[],
                        options=dict(image=dict(type="str", required=True), instance=dict(type="str", required=True))),
        ),
        supports_check_mode=True,
    )
    p = module.params
    binary = module.get_bin_path(p["runtime"])
    if not binary:
        module.exit_json(changed=False, removed=[], kept=[], absent=list(p["images"]),
                         msg=f"{p['runtime']} is not installed: no image to remove.")
    rc, out, err = module.run_command([binary] + container_images.LIST_ARGV[p["runtime"]])
    if rc != 0:
        module.fail_json(msg=f"vllm: {p['runtime']} could not list its images: {err.strip()}", rc=rc)
    store = container_images.store_images(p["runtime"], out)
    decision = container_images.images_to_remove(p["runtime"], p["images"], p["in_use"], store)
    if not module.check_mode:
        done = []
        for image in decision["remove"]:
            rc, dummy, err = module.run_command([binary] + image["argv"][1:])
            if rc != 0:
                module.fail_json(msg=f"vllm: {' '.join(image['argv'])} failed: {err.strip()} ({decision['msg']})", rc=rc,
                                 changed=bool(done), removed=done, kept=decision["kept"], absent=decision["absent"])
            done.append(image)
    module.exit_json(changed=bool(decision["remove"]), removed=decision.pop("remove"), **decision)


if __name__ == "__main__":
    main()
