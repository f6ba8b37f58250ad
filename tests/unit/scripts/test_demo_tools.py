"""scripts/demo.sh (``make demo``) stops before preparing anything when a controller tool is missing, naming the tool
and how to get it, instead of failing later on a bare "command not found"."""

import os
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BASH = shutil.which("bash")


def _fake(path, rc):
    path.write_text(f"#!{BASH}\nexit {rc}\n")
    path.chmod(0o755)


@pytest.mark.parametrize(("docker", "expected"), [
    (None, ["docker is not installed", "sudo apt-get install docker.io", "scripts/testbed.sh"]),
    (1, ["cannot reach the Docker daemon", "sudo systemctl start docker"]),
])
def test_demo_names_the_missing_tool_and_how_to_get_it(tmp_path, docker, expected):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    # Only what the script needs before its checks: dirname, and python3 (found in .venv/bin or here).
    for tool in ("dirname", "python3"):
        os.symlink(shutil.which(tool), bin_dir / tool)
    if docker is not None:
        _fake(bin_dir / "docker", docker)
    proc = subprocess.run([BASH, os.path.join(ROOT, "scripts", "demo.sh")], capture_output=True, text=True,
                          env={"PATH": str(bin_dir), "HOME": str(tmp_path)}, timeout=60, check=False)
    assert proc.returncode == 1
    for words in expected:
        assert words in proc.stderr, proc.stderr
    # Nothing was prepared.
    assert "preparing" not in proc.stdout + proc.stderr
