"""Make this checkout importable as ``ansible_collections.kunpeng.vllm``.

Modules import their helpers by their collection path, as Ansible does at run
time.  Unit tests run straight from the checkout, so a throw-away
``ansible_collections/kunpeng/vllm`` symlink tree is put on ``sys.path``.
"""

import os
import shutil
import sys
import tempfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES_SOURCE = os.path.join(ROOT, "tests", "unit", "fixtures")

_tree = tempfile.mkdtemp(prefix="kvllm-collections-")
os.makedirs(os.path.join(_tree, "ansible_collections", "kunpeng"))
os.symlink(ROOT, os.path.join(_tree, "ansible_collections", "kunpeng", "vllm"))
sys.path.insert(0, _tree)
for _name in [m for m in sys.modules if m == "ansible_collections" or m.startswith("ansible_collections.")]:
    del sys.modules[_name]

# Ansible's collection loader over the same tree, so templates rendered with
# Ansible's Templar find the collection's filters by FQCN
# (kunpeng.vllm.systemd_hardening), as ansible-playbook does.
from ansible.utils.collection_loader._collection_finder import _AnsibleCollectionFinder  # noqa: E402

_AnsibleCollectionFinder(paths=[_tree], scan_sys_paths=False)._install()


def _decode_pci_names(src, dest):
    """Copy the fixture tree, restoring PCI bus ids under ``bus/pci/devices``.

    sysfs names PCI devices ``0000:c1:00.0``; ':' is not allowed in collection
    file names (ansible-test's no-illegal-filenames), so captures store them as
    ``0000_c1_00.0`` and the tests read a decoded copy.
    """
    shutil.copytree(src, dest, symlinks=True)
    for dirpath, dirnames, _files in os.walk(dest):
        if dirpath.replace(os.sep, "/").endswith("bus/pci/devices"):
            for name in dirnames:
                os.rename(os.path.join(dirpath, name), os.path.join(dirpath, name.replace("_", ":")))


FIXTURES = os.path.join(_tree, "fixtures")
_decode_pci_names(FIXTURES_SOURCE, FIXTURES)


def model_spec(name, weight_dtype=None):
    """The planner's model record of fixtures/models/<name>.json, with the weight format declared when given."""
    import json

    from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import capacity

    with open(os.path.join(FIXTURES, "models", name + ".json")) as handle:
        spec = capacity.model_from_config(json.load(handle))
    if weight_dtype:
        spec.update(weight_dtype=weight_dtype, block_fp8=False)
    return spec


def pytest_collection_modifyitems(items):
    """Mark the tests that run Ansible's command lines (ansible-playbook, ansible-doc) on the collection.

    They are the ones that need :func:`collections_path`, directly or through another fixture, and they take most
    of the unit stage's time: ``pytest tests/unit -m "not playbook"`` is the fast inner loop, and CI runs all.
    """
    for item in items:
        if "collections_path" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.playbook)


@pytest.fixture(scope="session")
def collections_path():
    """A directory whose ansible_collections/kunpeng/vllm is this checkout (for ansible-playbook runs)."""
    return _tree


#: What a root-owned file outside a tree holds, for the tests that plant a link to it (the store, the model tree).
VICTIM_TEXT = b"root:x:0:0:root:/root:/bin/bash\n"


@pytest.fixture
def victim(tmp_path):
    """A file outside the tree under test, mode 0600, that a planted link points at."""
    path = tmp_path / "outside" / "passwd"
    path.parent.mkdir()
    path.write_bytes(VICTIM_TEXT)
    path.chmod(0o600)
    return path
