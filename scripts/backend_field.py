"""Print one field of the backend registry: backend_field.py BACKEND FIELD.

For the shell scripts of the test bed (the engine image, the wheelhouse):
plugins/module_utils/backends/ imports nothing from Ansible, so the checkout is
made importable as ansible_collections.kunpeng.vllm through a link in a
temporary folder, and no installed collection is needed.
"""
import importlib
import os
import sys
import tempfile


def main(argv):
    if len(argv) != 3:
        sys.stderr.write("usage: backend_field.py BACKEND FIELD\n")
        return 2
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with tempfile.TemporaryDirectory(prefix="kv-backend-field-") as tmp:
        os.makedirs(os.path.join(tmp, "ansible_collections", "kunpeng"))
        os.symlink(root, os.path.join(tmp, "ansible_collections", "kunpeng", "vllm"))
        sys.path.insert(0, tmp)
        backends = importlib.import_module("ansible_collections.kunpeng.vllm.plugins.module_utils.backends.registry")
        value = backends.field(argv[1], argv[2])
    if value in (None, ""):
        sys.stderr.write(f"backend_field.py: no {argv[2]} for the {argv[1]} backend in plugins/module_utils/backends/\n")
        return 1
    print(value)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
