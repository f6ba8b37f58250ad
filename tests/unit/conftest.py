"""Make this checkout importable as ``ansible_collections.kunpeng.vllm``.

Modules import their helpers by their collection path, as Ansible does at run
time.  Unit tests run straight from the checkout, so a throw-away
``ansible_collections/kunpeng/vllm`` symlink tree is put on ``sys.path``.
"""

import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(ROOT, "tests", "unit", "fixtures")

_tree = tempfile.mkdtemp(prefix="kvllm-collections-")
os.makedirs(os.path.join(_tree, "ansible_collections", "kunpeng"))
os.symlink(ROOT, os.path.join(_tree, "ansible_collections", "kunpeng", "vllm"))
sys.path.insert(0, _tree)
for _name in [m for m in sys.modules if m == "ansible_collections" or m.startswith("ansible_collections.")]:
    del sys.modules[_name]
