"""Print the engine virtualenv the vllm role plans: engine_venv.py INSTALL_DIR VERSION BACKEND [PACKAGE ...].

PACKAGE: the extra packages of the plan (vllm_extra_packages and the
cluster's engine_packages, Ray's pin); the path is plan/deployment.py's
venv_path, so the engine image of the test bed puts a virtualenv exactly
where the role looks for it.
"""
import sys

from backend_field import collection_module


def main(argv):
    if len(argv) < 4:
        sys.stderr.write("usage: engine_venv.py INSTALL_DIR VERSION BACKEND [PACKAGE ...]\n")
        return 2
    with collection_module("plugins.module_utils.plan.deployment") as deployment:
        print(deployment.venv_path(argv[1], argv[2], argv[3], argv[4:]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
