"""Run a module's ``main()`` in-process, the way community.general tests do.

``exit_json`` / ``fail_json`` are patched to raise, so a test gets the result
dict (and whether it failed) without a subprocess; ``warn`` calls are
collected.  One place for every module test in this folder.
"""

import contextlib
import json
from typing import Any, Callable, Dict, List, Optional, Tuple
from unittest import mock

from ansible.module_utils import basic

try:
    from ansible.module_utils.testing import patch_module_args
except ImportError:  # ansible-core < 2.19 has no testing helper; this is what it does there.
    @contextlib.contextmanager
    def patch_module_args(args):
        with mock.patch.object(basic, "_ANSIBLE_ARGS", json.dumps({"ANSIBLE_MODULE_ARGS": args}).encode()):
            yield


class ModuleExit(Exception):
    def __init__(self, result: Dict[str, Any], failed: bool) -> None:
        super().__init__(result)
        self.result, self.failed = result, failed


def run_main(main: Callable[[], None], args: Dict[str, Any], check_mode: bool = False,
             warnings: Optional[List[str]] = None, diff: bool = False) -> Tuple[bool, Dict[str, Any]]:
    """Call ``main()`` with module ``args`` (``diff``: as under --diff); return ``(failed, result)``."""

    def exit_json(self, **kwargs):
        raise ModuleExit(kwargs, False)

    def fail_json(self, **kwargs):
        raise ModuleExit(kwargs, True)

    def warn(self, msg):
        if warnings is not None:
            warnings.append(msg)

    module_args = dict(args)
    if check_mode:
        module_args["_ansible_check_mode"] = True
    if diff:
        module_args["_ansible_diff"] = True
    with patch_module_args(module_args), \
            mock.patch.object(basic.AnsibleModule, "exit_json", exit_json), \
            mock.patch.object(basic.AnsibleModule, "fail_json", fail_json), \
            mock.patch.object(basic.AnsibleModule, "warn", warn):
        try:
            main()
        except ModuleExit as exc:
            return exc.failed, exc.result
    raise AssertionError("module returned without exit_json/fail_json")
