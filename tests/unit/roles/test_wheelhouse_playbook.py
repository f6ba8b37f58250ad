"""``ansible-playbook kunpeng.vllm.wheelhouse``, run by FQCN as users run it
from an installed collection: the wheelhouse lands under the controller
user's home (never in playbook_dir, which is then the collection itself), and
``--check`` resolves and picks without writing anything.

uv and pip are the only parts that need the network; they are replaced by
executables that replay the H200 capture (tests/unit/fixtures/nvidia/h200/
offline-serve: the requirements uv was given and the resolution it printed)
and, for pip download, record any call.
"""

import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
CAPTURE = os.path.join(ROOT, "tests", "unit", "fixtures", "nvidia", "h200", "offline-serve")
TARGET = {"wheelhouse_backend": "cuda", "wheelhouse_vllm_version": "0.26.0", "wheelhouse_python_version": "3.12",
          "wheelhouse_architecture": "x86_64", "wheelhouse_glibc": "2.39"}
DEST = ".kunpeng-vllm/wheelhouse/cuda-0.26.0-py3.12-x86_64"

# uv: 'pip compile -' with the captured requirements on stdin prints the captured resolution.
FAKE_UV = f"""#!{sys.executable}
import sys
args = sys.argv[1:]
assert args[:3] == ["pip", "compile", "-"] and "--output-file" not in args, args
given = sys.stdin.read().split()
with open({os.path.join(CAPTURE, "requirements.in")!r}) as f:
    assert given == f.read().split(), given
with open({os.path.join(CAPTURE, "resolved.txt")!r}) as f:
    sys.stdout.write(f.read())
"""
# python -m pip download must not run in check mode: record any call.
FAKE_PYTHON = """#!/bin/sh
echo "$@" >> "$(dirname "$0")/pip-calls"
"""


def _tool(path, text):
    path.write_text(text)
    path.chmod(0o755)
    return str(path)


def _run(collections_path, tmp_path, *args):
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    extra = dict(TARGET, wheelhouse_uv=_tool(bin_dir / "uv", FAKE_UV),
                 wheelhouse_python=_tool(bin_dir / "python", FAKE_PYTHON),
                 ansible_python_interpreter=sys.executable)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(HOME=str(home), ANSIBLE_COLLECTIONS_PATH=collections_path, ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0")
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"),
                           "kunpeng.vllm.wheelhouse", "-e", json.dumps(extra), *args],
                          env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
    return proc, home / DEST, bin_dir


@pytest.fixture(scope="module")
def check_run(collections_path, tmp_path_factory):
    return _run(collections_path, tmp_path_factory.mktemp("check"), "--check")


def test_check_mode_resolves_and_picks_without_writing(check_run):
    proc, dest, bin_dir = check_run
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Pick the pins to download" in proc.stdout and "wheels" in proc.stdout
    assert not dest.exists() and not (bin_dir / "pip-calls").exists()


def test_the_wheelhouse_is_under_the_home_of_the_controller_user(check_run):
    proc, dest, _bin = check_run
    assert f"in {dest} (" in proc.stdout, proc.stdout


def test_a_controller_without_uv_is_told_how_to_get_it(collections_path, tmp_path):
    """Not "Error executing command." (rc 2): the failure names uv, the variable and the install command."""
    proc, dest, _bin = _run(collections_path, tmp_path, "-e", "wheelhouse_uv=uv-not-installed-here")
    assert proc.returncode == 2
    assert "uv is not found on the controller (wheelhouse_uv: 'uv-not-installed-here')" in proc.stdout, proc.stdout
    assert "pip install uv" in proc.stdout
    assert not dest.exists()
