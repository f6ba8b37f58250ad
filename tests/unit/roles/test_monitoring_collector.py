"""The collector script, run as the systemd timer runs it: a plain python3
process with the Python standard library only, vendor tools found on PATH.

nvidia-smi is a stand-in script that prints the real H200 capture; npu-smi is
the Ascend double of molecule/ascend/doubles (replaying fixtures/ascend).
"""

import os
import subprocess
import sys

import pytest
from conftest import FIXTURES, ROOT
from promtool import promtool_check_metrics

COLLECTOR = os.path.join(ROOT, "roles", "monitoring", "files", "accelerator_metrics_collector.py")


@pytest.fixture()
def tools(tmp_path):
    """A PATH with nvidia-smi (the H200 capture) and npu-smi (the Ascend double)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    nvidia = bin_dir / "nvidia-smi"
    nvidia.write_text('#!/bin/sh\n[ "$*" = "-q -x" ] || exit 2\ncat "{}"\n'.format(
        os.path.join(FIXTURES, "nvidia", "h200", "nvidia-smi-q-x.xml")))
    nvidia.chmod(0o755)
    npu = bin_dir / "npu-smi"
    with open(os.path.join(ROOT, "molecule", "ascend", "doubles", "npu-smi")) as handle:
        npu.write_text(handle.read())
    npu.chmod(0o755)
    home = tmp_path / "ascend"
    home.mkdir()
    os.symlink(os.path.join(FIXTURES, "ascend", "atlas-800i-a2"), str(home / "npu-smi-data"))
    return {"PATH": f"{bin_dir}:/usr/bin:/bin", "ASCEND_DOUBLE_HOME": str(home)}


def run(args, env, cwd):
    """The collector in a clean interpreter: no sys.path from pytest, no ansible importable."""
    return subprocess.run([sys.executable, "-I", "-S", COLLECTOR] + args, env=dict(env, LC_ALL="C"), cwd=str(cwd),
                          capture_output=True, text=True, check=False)


def test_stdout_once_both_vendors(tools, tmp_path):
    proc = run(["--once", "--stdout"], tools, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert 'kunpeng_accelerator_devices{vendor="ascend"} 8' in proc.stdout
    assert 'kunpeng_accelerator_devices{vendor="nvidia"} 1' in proc.stdout
    assert 'model="NVIDIA H200"' in proc.stdout
    rc, output = promtool_check_metrics(proc.stdout)
    assert rc == 0, output


def test_textfile_written_atomically(tools, tmp_path):
    textfile_dir = tmp_path / "textfile"
    textfile_dir.mkdir()
    (textfile_dir / "kunpeng_accelerator.prom").write_text("stale\n")
    proc = run(["--once", "--textfile-dir", str(textfile_dir)], tools, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert sorted(os.listdir(str(textfile_dir))) == ["kunpeng_accelerator.prom"]  # no temporary file left
    written = textfile_dir / "kunpeng_accelerator.prom"
    assert oct(written.stat().st_mode & 0o777) == "0o644"
    assert written.read_text().startswith("# HELP kunpeng_accelerator_memory_used_bytes")


def test_failing_tool_exits_nonzero_and_still_writes(tools, tmp_path):
    broken = tmp_path / "bin" / "nvidia-smi"
    broken.write_text("#!/bin/sh\necho 'NVIDIA-SMI has failed' >&2\nexit 9\n")
    proc = run(["--once", "--stdout"], tools, tmp_path)
    assert proc.returncode == 1
    assert "nvidia: nvidia-smi exited 9: NVIDIA-SMI has failed" in proc.stderr
    assert 'kunpeng_accelerator_collector_success{vendor="nvidia"} 0' in proc.stdout
    assert 'kunpeng_accelerator_collector_success{vendor="ascend"} 1' in proc.stdout


def test_unwritable_directory_fails_loudly(tools, tmp_path):
    proc = run(["--once", "--textfile-dir", str(tmp_path / "missing")], tools, tmp_path)
    assert proc.returncode != 0 and "missing" in proc.stderr


def test_parsers_installed_beside_the_collector(tools, tmp_path):
    """The role's layout: collector.py with the module_utils the role copies (every module of the probe folder,
    tasks/accelerators.yml) beside it."""
    with open(os.path.join(ROOT, "roles", "monitoring", "tasks", "accelerators.yml")) as handle:
        assert "plugins/module_utils/probe/*.py" in handle.read()
    copied = sorted(name[:-3] for name in os.listdir(os.path.join(ROOT, "plugins", "module_utils", "probe")) if name.endswith(".py"))
    target = tmp_path / "lib"
    (target / "module_utils").mkdir(parents=True)
    with open(COLLECTOR) as handle:
        (target / "collector.py").write_text(handle.read())
    for name in copied:
        with open(os.path.join(ROOT, "plugins", "module_utils", "probe", name + ".py")) as handle:
            (target / "module_utils" / (name + ".py")).write_text(handle.read())
    proc = subprocess.run([sys.executable, "-I", "-S", str(target / "collector.py"), "--once", "--stdout"],
                          env=dict(tools, LC_ALL="C"), capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert 'kunpeng_accelerator_devices{vendor="nvidia"} 1' in proc.stdout


def test_replays_the_real_h200_run(tmp_path):
    """The XML nvidia-smi gave on the H200 host yields the metrics the collector printed there."""
    capture = os.path.join(FIXTURES, "nvidia", "h200", "collector")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    nvidia = bin_dir / "nvidia-smi"
    nvidia.write_text('#!/bin/sh\n[ "$*" = "-q -x" ] || exit 2\ncat "{}"\n'.format(
        os.path.join(capture, "nvidia-smi-q-x.xml")))
    nvidia.chmod(0o755)
    proc = run(["--once", "--stdout"], {"PATH": f"{bin_dir}:/usr/bin:/bin"}, tmp_path)
    assert proc.returncode == 0, proc.stderr

    # The XML was taken seconds before the collector's own nvidia-smi call, so
    # live readings (power, temperature, utilisation, memory in use) may have
    # moved; the series and every other value must be the same.
    live = ("kunpeng_accelerator_collector_last_run", "kunpeng_accelerator_power_watts",
            "kunpeng_accelerator_temperature_celsius", "kunpeng_accelerator_utilization_ratio",
            "kunpeng_accelerator_memory_used_bytes")

    def series(text):
        found = {}
        for line in text.splitlines():
            if line.startswith("#"):
                found[line] = None
                continue
            name, value = line.rsplit(" ", 1)
            found[name] = None if name.startswith(live) else value
        return found

    with open(os.path.join(capture, "collector.prom"), encoding="utf-8") as handle:
        recorded = handle.read()
    assert series(proc.stdout) == series(recorded)
    assert 'kunpeng_accelerator_memory_total_bytes{vendor="nvidia"' in recorded
