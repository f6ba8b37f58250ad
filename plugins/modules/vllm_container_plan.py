#!/usr/bin/python
# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

DOCUMENTATION = r"""
---
module: vllm_container_plan
short_description: Plan a vLLM instance that runs from an OCI image (vllm_install_method container)
version_added: "0.3.0"
description:
  - Reads the container runtimes installed on the node (C(podman --version), C(docker --version)) and decides,
    with the functions of C(plugins/module_utils/plan/container.py), which runtime runs the image, whether
    a Quadlet file starts it (podman 4.8 or later) and its keys, the image the unit runs (the archive's image ID, or the
    pinned registry reference), the devices and driver files of the backend and the full argv of the
    container.
  - Refuses, before anything changes, an image reference without a C(@sha256:) digest unless
    O(allow_unpinned) is set, and an image that does not fit the host (O(image_info) against O(host)).
  - Changes nothing.
author:
  - kunpeng.vllm maintainers (@kunpeng-vllm)
options:
  runtime:
    description: C(auto) (podman where installed, docker where only docker is, else podman to install), C(podman) or C(docker).
    type: str
    choices: [auto, podman, docker]
    default: auto
  image:
    description: The registry reference, C(<name>@sha256:<digest>); ignored when O(archive_image) is given.
    type: str
    default: ""
  archive_image:
    description: What M(kunpeng.vllm.vllm_container_image) read from the archive the role pushes (C(id), C(architecture), C(labels)); empty without an archive.
    type: dict
    default: {}
  image_info:
    description: Architecture and labels of the image to check against O(host); O(archive_image) when empty.
    type: dict
    default: {}
  allow_unpinned:
    description: Accept an O(image) without a digest.
    type: bool
    default: false
  backend:
    description: The planned backend (C(kunpeng_vllm_plan.backend)).
    type: str
    required: true
  visible_devices:
    description: C(vllm_visible_devices); empty gives the container every device of O(accelerators).
    type: str
    default: ""
  accelerators:
    description: C(kunpeng_accelerators) (the device lists are read).
    type: dict
    default: {}
  host:
    description:
      - C(architecture) (Ansible's fact) and C(accelerators) (C(kunpeng_accelerators)); the backend reads its
        driver's versions from its own section of the probe (plugins/module_utils/backends/).
    type: dict
    default: {}
  tensor_parallel:
    description: The engine's tensor parallel size (sizes /dev/shm).
    type: int
    default: 1
  pipeline_parallel:
    description: The engine's pipeline parallel size (sizes /dev/shm).
    type: int
    default: 1
  memory_limit:
    description:
      - The container's memory limit (C(vllm_container_memory_limit)) - C(auto), the host's memory less a reserve
        for the system (a tenth of it, at least 2 GiB and at most 16 GiB), C(none), or a size such as C(64g) or
        C(65536m). Passed as C(--memory) with C(--memory-swap) at the same size; the kernel's OOM killer then
        acts inside the container.
      - A value of another form, below 1 GiB or above the host's memory fails the plan, naming the variable.
    type: str
    default: auto
  host_memory_mib:
    description: The host's memory in MiB (Ansible's C(memtotal_mb) fact); 0 when unknown, which C(auto) refuses.
    type: int
    default: 0
  groups:
    description:
      - The driver's device groups the service joins (the venv unit's C(SupplementaryGroups=); empty when the
        driver is installed for all users). A backend whose container row has C(group_add) (Ascend) joins them
        with C(--group-add <gid>), the GID read from the node's group database; the others ignore them.
    type: list
    elements: str
    default: []
  settings:
    description:
      - The role variables container mode does not carry out in every value - C(vllm_cluster_group),
        C(vllm_service_manager), C(vllm_engine_artifact_mode), C(vllm_reuse_host_torch). A value other than the
        supported one (empty, C(systemd), C(none), false) fails the plan before any change, naming the variable.
    type: dict
    default: {}
  check_only:
    description: Check O(image_info) against O(host) and return nothing else (no fact set).
    type: bool
    default: false
  run:
    description:
      - The paths and identity of the container, as the vllm role passes them to the argv
        function - C(name), C(uid), C(gid), C(env_file), C(model_dir), C(config_file), C(python_dir),
        C(cache_dir), C(read_only), C(command). Required unless O(check_only).
    type: dict
    default: {}
extends_documentation_fragment:
  - kunpeng.vllm.attributes.read_only
  - kunpeng.vllm.attributes.facts
"""

EXAMPLES = r"""
- name: Plan the container of the instance
  kunpeng.vllm.vllm_container_plan:
    image: quay.io/ascend/vllm-ascend@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
    backend: ascend
    accelerators: "{{ kunpeng_accelerators }}"
    host: {architecture: aarch64, accelerators: "{{ kunpeng_accelerators }}"}
    run:
      name: vllm-demo
      uid: 998
      gid: 997
      env_file: /etc/vllm/demo.container.env
      model_dir: /srv/models/demo
      config_file: /etc/vllm/demo.yaml
      python_dir: /opt/vllm/python
      cache_dir: /var/cache/vllm/demo
      command: [vllm, serve]
"""

RETURN = r"""
ansible_facts:
  description: C(kunpeng_vllm_container), the keys below.
  returned: success
  type: dict
runtime:
  description: The runtime that runs the image.
  returned: success
  type: str
  sample: podman
install_package:
  description: The runtime's package to install; null when it is installed.
  returned: success
  type: str
quadlet:
  description:
    - Whether a Quadlet C(.container) file starts the engine (podman 4.8 or later), else a plain unit.
    - podman 4.4 to 4.7 run the plain unit, their Quadlet generator would not run the same container.
  returned: success
  type: bool
quadlet_keys:
  description:
    - The C([Container]) section of the Quadlet file, C([key, value]) rows in order; empty without Quadlet.
    - A value is a string, or a list of arguments (C(Exec), C(PodmanArgs)).
  returned: success
  type: list
  elements: list
  sample: [[ContainerName, vllm-demo], [Image, "sha256:0123..."], [Exec, [serve, /srv/models/demo]]]
unit_file:
  description:
    - C(path), the file that starts the instance (C(/etc/containers/systemd/<name>.container) with Quadlet,
      else C(/etc/systemd/system/<name>.service)), C(other), the file of the other kind, removed, and
      C(enable), whether C(systemctl enable) applies (not to a unit Quadlet generates).
    - Either way systemd runs it as C(<name>.service).
  returned: success
  type: dict
  sample: {path: /etc/containers/systemd/vllm-demo.container, other: /etc/systemd/system/vllm-demo.service, enable: false}
image:
  description: What the unit runs, the archive's image ID or the pinned reference.
  returned: success
  type: str
image_id:
  description: The archive's image ID; empty for a registry image.
  returned: success
  type: str
archive:
  description: Whether the image comes from an archive.
  returned: success
  type: bool
name:
  description: The container's name.
  returned: success
  type: str
argv:
  description: The container's C(<runtime> run) argv.
  returned: success
  type: list
  elements: str
commands:
  description: C(pre) (ExecStartPre lines) and C(stop) (ExecStop lines), each an argv.
  returned: success
  type: dict
shm_mib:
  description: The container's /dev/shm in MiB.
  returned: success
  type: int
memory_mib:
  description: The container's memory limit in MiB (O(memory_limit)); null for none.
  returned: success
  type: int
environment_drop:
  description: Service variables the container's environment leaves out.
  returned: success
  type: list
  elements: str
problems:
  description: Why the image does not fit the host (the module fails when there are any).
  returned: failure, or with check_only
  type: list
  elements: str
"""

import grp  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import container  # noqa: E402


def _version(module, binary):
    path = module.get_bin_path(binary)
    if not path:
        return ""
    rc, out, dummy = module.run_command([path, "--version"])
    return out.strip() if rc == 0 else ""


def _gids(names):
    """The node's GID of each group in ``names`` that exists."""
    gids = {}
    for name in names:
        try:
            gids[name] = grp.getgrnam(name).gr_gid
        except KeyError:
            pass
    return gids


def main():
    module = AnsibleModule(
        argument_spec=dict(
            runtime=dict(type="str", default="auto", choices=["auto", "podman", "docker"]),
            image=dict(type="str", default=""),
            archive_image=dict(type="dict", default={}),
            image_info=dict(type="dict", default={}),
            allow_unpinned=dict(type="bool", default=False),
            backend=dict(type="str", required=True),
            visible_devices=dict(type="str", default=""),
            accelerators=dict(type="dict", default={}),
            host=dict(type="dict", default={}),
            tensor_parallel=dict(type="int", default=1),
            pipeline_parallel=dict(type="int", default=1),
            check_only=dict(type="bool", default=False),
            run=dict(type="dict", default={}),
            groups=dict(type="list", elements="str", default=[]),
            memory_limit=dict(type="str", default="auto"),
            host_memory_mib=dict(type="int", default=0),
            settings=dict(type="dict", default={}),
        ),
        supports_check_mode=True,
    )
    p = module.params
    problems = container.image_problems(p["image_info"] or p["archive_image"], p["backend"], p["host"])
    if problems:
        module.fail_json(msg="vllm: the image does not fit this host: " + "; ".join(problems), problems=problems)
    if p["check_only"]:
        module.exit_json(changed=False, problems=[])
    if not p["run"]:
        module.fail_json(msg="run is required unless check_only is set")
    request = dict(p["run"], runtime=p["runtime"], image=p["image"], archive_image=p["archive_image"],
                   allow_unpinned=p["allow_unpinned"], backend=p["backend"],
                   visible=container.visible_indexes(p["backend"], p["visible_devices"], p["accelerators"]),
                   tensor_parallel=p["tensor_parallel"], pipeline_parallel=p["pipeline_parallel"],
                   groups=p["groups"], group_ids=_gids(p["groups"]), settings=p["settings"],
                   memory_limit=p["memory_limit"], host_memory_mib=p["host_memory_mib"])
    probe = {"podman_version": _version(module, "podman"), "docker_version": _version(module, "docker")}
    try:
        result = container.plan(request, probe)
    except container.ContainerPlanError as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(changed=False, ansible_facts={"kunpeng_vllm_container": result}, **result)


if __name__ == "__main__":
    main()
