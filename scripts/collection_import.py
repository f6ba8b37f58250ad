"""Import this checkout's plugins/module_utils by their collection path
(``ansible_collections.kunpeng.vllm...``), as Ansible does at run time.

Scripts find the checkout through ``.build/collections`` (``make
collection-link``); the unit tests put their own link on ``sys.path`` first.
"""

import importlib
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def module_utils(name):
    """``plugins/module_utils/<name>`` (dotted, e.g. ``plan.input_check``) of kunpeng.vllm."""
    collections = os.path.join(ROOT, ".build", "collections")
    if collections not in sys.path:
        sys.path.append(collections)
    try:
        return importlib.import_module(f"ansible_collections.kunpeng.vllm.plugins.module_utils.{name}")
    except ImportError as exc:
        raise SystemExit(f"cannot import kunpeng.vllm's {name} ({exc}); run make collection-link") from exc
