#!/usr/bin/python
# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

DOCUMENTATION = r"""
---
module: host_torch
short_description: Check that a host environment's torch can serve a vLLM row
description:
  - Asks O(python) (the interpreter of the environment a vendor image ships torch or torch_npu in, for example an NGC
    image's Python or a virtualenv) for its C(torch) and C(torch_npu) versions and its C(site-packages) folders.
  - Compares them with the compatibility-matrix row (O(row), as M(kunpeng.vllm.vllm_plan) returns it in
    C(kunpeng_vllm_plan.row)) and fails with the fix when they differ.
  - The C(kunpeng.vllm.vllm) role then adds those folders to the engine virtualenv through a C(.pth) file, after the
    virtualenv's own site-packages, so the engine's own packages shadow the host's. C(python -m venv
    --system-site-packages) would not do, since it exposes the base interpreter's site-packages, not a virtualenv's.
version_added: "0.1.0"
author:
  - kunpeng.vllm maintainers (@kunpeng-vllm)
extends_documentation_fragment:
  - kunpeng.vllm.attributes.read_only
options:
  python:
    description: Interpreter of the environment that holds torch.
    type: path
    required: true
  row:
    description: Compatibility-matrix row with C(vllm), C(torch) and, for Ascend rows, C(torch_npu).
    type: dict
    required: true
  fail_on_mismatch:
    description: Fail when the versions differ (otherwise return C(problem)).
    type: bool
    default: true
"""

EXAMPLES = r"""
- name: Check the image's torch against the planned row
  kunpeng.vllm.host_torch:
    python: /opt/torch/.venv/bin/python3
    row: "{{ kunpeng_vllm_plan.row }}"
  register: host_torch
"""

RETURN = r"""
torch:
  description: torch version of O(python) (None when it cannot import torch).
  type: str
  returned: always
  sample: 2.11.0+cu130
torch_npu:
  description: torch_npu version of O(python) (None when absent).
  type: str
  returned: always
site_packages:
  description: The site-packages folders of O(python) that hold its packages.
  type: list
  elements: str
  returned: always
  sample: [/opt/torch/.venv/lib/python3.12/site-packages]
python_version:
  description: C(X.Y) of O(python); the engine virtualenv must be made with the same version.
  type: str
  returned: always
problem:
  description: Why the host torch cannot serve the row, or None.
  type: str
  returned: always
"""

import json  # noqa: E402
import os  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.wheelhouse import host_torch_problem  # noqa: E402

PROBE = r"""
import json, site, sys, sysconfig
from importlib import metadata
found = {}
for key, dist in (("torch", "torch"), ("torch_npu", "torch-npu")):
    try:
        found[key] = metadata.version(dist)
    except metadata.PackageNotFoundError:
        found[key] = None
paths = [sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]
found["site_packages"] = [p for i, p in enumerate(paths) if p not in paths[:i]]
found["python_version"] = "%d.%d" % sys.version_info[:2]
print(json.dumps(found))
"""


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            python=dict(type="path", required=True),
            row=dict(type="dict", required=True),
            fail_on_mismatch=dict(type="bool", default=True),
        ),
        supports_check_mode=True,
    )
    p = module.params
    if not os.access(p["python"], os.X_OK):
        module.fail_json(msg=f"{p['python']} is not an executable interpreter on this host; set vllm_host_torch_python to "
                         "the interpreter of the environment that holds torch")
    rc, out, err = module.run_command([p["python"], "-c", PROBE])
    if rc != 0:
        module.fail_json(msg=f"{p['python']} did not run: {(err or out).strip()}; set vllm_host_torch_python to the "
                         "interpreter of the environment that holds torch")
    host = json.loads(out)
    host["problem"] = host_torch_problem(p["row"], host)
    if host["problem"] and p["fail_on_mismatch"]:
        module.fail_json(msg=host["problem"], **host)
    module.exit_json(changed=False, **host)


if __name__ == "__main__":
    main()
