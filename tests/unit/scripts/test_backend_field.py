"""scripts/backend_field.py, which the engine image and the wheelhouse script call for the cpu backend's Ray
release, reads the registry from the checkout (it once read a file the registry had moved out of)."""

import subprocess
import sys

import pytest
from conftest import ROOT

from ansible_collections.kunpeng.vllm.plugins.module_utils.backends import registry as backends


@pytest.mark.parametrize("name", backends.NAMES)
def test_prints_the_registrys_ray_version(name):
    out = subprocess.run([sys.executable, f"{ROOT}/scripts/backend_field.py", name, "ray_version"],
                         capture_output=True, text=True, check=True, cwd="/")
    assert out.stdout.strip() == backends.field(name, "ray_version")


def test_an_unknown_field_fails_and_says_so():
    out = subprocess.run([sys.executable, f"{ROOT}/scripts/backend_field.py", "cpu", "build_toolchain"],
                         capture_output=True, text=True, cwd="/", check=False)
    assert out.returncode == 1 and "no build_toolchain for the cpu backend" in out.stderr
