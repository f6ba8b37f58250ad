"""Print one field of the backend registry: backend_field.py BACKEND FIELD.

For the shell scripts of the test bed (the engine image, the wheelhouse):
plugins/module_utils/ imports nothing from Ansible, so the checkout is made
importable as ansible_collections.kunpeng.vllm through a link in a temporary
folder, and no installed collection is needed (:func:`collection_module`,
which scripts/engine_venv.py uses too).
"""
import contextlib
import importlib
import os
import sys
import tempfile


@contextlib.contextmanager
def collection_module(name):
    """The module ``ansible_collections.kunpeng.vllm.<name>`` of this checkout, while the link exists."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with tempfile.TemporaryDirectory(prefix="kv-collection-") as tmp:
        os.makedirs(os.path.join(tmp, "ansible_collections", "kunpeng"))
        os.symlink(root, os.path.join(tmp, "ansible_collections", "kunpeng", "vllm"))
        sys.path.insert(0, tmp)
        try:
            yield importlib.import_module(f"ansible_collections.kunpeng.vllm.{name}")
        finally:
            sys.path.remove(tmp)


def main(argv):
    if len(argv) != 3:
        sys.stderr.write("usage: backend_field.py BACKEND FIELD\n")
        return 2
    with collection_module("plugins.module_utils.backends.registry") as backends:
        value = backends.field(argv[1], argv[2])
    if value in (None, ""):
        sys.stderr.write(f"backend_field.py: no {argv[2]} for the {argv[1]} backend in plugins/module_utils/backends/\n")
        return 1
    print(value)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
