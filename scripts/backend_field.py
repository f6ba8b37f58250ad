"""Print one field of the backend registry: backend_field.py BACKEND FIELD.

For the shell scripts of the test bed (the engine image, the wheelhouse):
plugins/module_utils/backends.py imports nothing from Ansible, so it is
loaded as a plain file and no collection path is needed.
"""
import importlib.util
import os
import sys


def main(argv):
    if len(argv) != 3:
        sys.stderr.write("usage: backend_field.py BACKEND FIELD\n")
        return 2
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "plugins", "module_utils", "backends.py")
    spec = importlib.util.spec_from_file_location("backends", path)
    backends = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(backends)
    value = backends.field(argv[1], argv[2])
    if value in (None, ""):
        sys.stderr.write(f"backend_field.py: no {argv[2]} for the {argv[1]} backend in {path}\n")
        return 1
    print(value)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
