"""A model download is staged, checked and renamed into place with its marker (issue 29, point 10).

Runs roles/vllm/tasks/model_download.yml with ansible-playbook on the
controller and a fetch step that stops half way, as an interrupted Hugging
Face, ModelScope or archive download does.  Before, the download wrote
straight into vllm_model_dir under ``creates: config.json``: config.json
arrives first, so the next run took the partial model as complete.
"""

import getpass
import grp
import json
import os

import pytest
from playbook_run import run_playbook

MARKER = ".kunpeng-model-complete"


def _run(collections_path, model_dir, interrupt, weights):
    account = getpass.getuser()
    return run_playbook(collections_path, "vllm_model_download.yml", {
        "fetch_file": "model_fetch_partial.yml", "interrupt": interrupt, "weights": weights,
        "vllm_model_dir": str(model_dir), "vllm_model_source": "huggingface", "vllm_model_src": "org/model",
        "vllm_model_revision": "", "vllm_user": account, "vllm_group": grp.getgrgid(os.getgid()).gr_name})


@pytest.mark.skipif(os.geteuid() != 0, reason="the role sets root ownership on the staging directory")
def test_an_interrupted_download_is_never_taken_as_complete(collections_path, tmp_path):
    model_dir = tmp_path / "models" / "m"
    model_dir.parent.mkdir()
    proc = _run(collections_path, model_dir, True, "half")
    assert proc.returncode != 0 and "interrupted" in proc.stdout, proc.stdout[-3000:]
    assert not model_dir.exists(), "a partial download is in the model directory"
    assert (tmp_path / "models" / "m.partial" / "config.json").exists()

    proc = _run(collections_path, model_dir, False, "complete")
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert (model_dir / "model.safetensors").read_text() == "complete"
    assert json.loads((model_dir / MARKER).read_text())["src"] == "org/model"
    assert not (tmp_path / "models" / "m.partial").exists()
    # Root's and readable by the service group; the next run changes nothing.
    info = os.stat(model_dir / "config.json")
    assert (info.st_uid, info.st_gid, info.st_mode & 0o7777) == (0, os.getgid(), 0o640)
    assert os.stat(model_dir).st_mode & 0o7777 == 0o750
    proc = _run(collections_path, model_dir, False, "complete")
    assert proc.returncode == 0 and " changed=0 " in proc.stdout, proc.stdout[-3000:]


@pytest.mark.skipif(os.geteuid() != 0, reason="the role sets root ownership on the staging directory")
def test_an_unmarked_model_directory_is_resumed_in_staging_and_completed(collections_path, tmp_path):
    model_dir = tmp_path / "m"
    model_dir.mkdir()
    (model_dir / "config.json").write_text("{}\n")
    (model_dir / "tokenizer.json").write_text("kept\n")
    proc = _run(collections_path, model_dir, False, "complete")
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert (model_dir / "tokenizer.json").read_text() == "kept\n"
    assert (model_dir / MARKER).exists() and (model_dir / "model.safetensors").read_text() == "complete"


@pytest.mark.skipif(os.geteuid() != 0, reason="the role sets root ownership on the staging directory")
def test_a_staging_symlink_the_service_account_planted_is_refused_and_its_target_untouched(collections_path, tmp_path):
    """Review finding M1: the account that owned base_model_dir dropped the marker and planted
    <model>.partial -> /etc; the staging task gave the link's target to root (download) or to the account (copy)."""
    victim = tmp_path / "etc"
    victim.mkdir()
    victim.chmod(0o755)
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "m.partial").symlink_to(victim)
    proc = _run(collections_path, tmp_path / "models" / "m", False, "complete")
    assert proc.returncode != 0 and "is a symlink" in proc.stdout and "m.partial" in proc.stdout, proc.stdout[-3000:]
    info = os.stat(victim)
    assert (info.st_uid, info.st_gid, info.st_mode & 0o7777) == (0, 0, 0o755) and os.listdir(victim) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another account needs root")
def test_a_parent_the_service_account_can_rewrite_is_refused_naming_the_variable(collections_path, tmp_path):
    models = tmp_path / "models"
    models.mkdir()
    os.chown(models, 65534, 65534)
    proc = _run(collections_path, models / "m", False, "complete")
    assert proc.returncode != 0 and "vllm_model_dir:" in proc.stdout and "uid 65534" in proc.stdout, proc.stdout[-3000:]
    assert os.listdir(models) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another account needs root")
def test_a_model_the_service_account_owned_becomes_roots_and_loses_its_links(collections_path, tmp_path):
    """The layout before this release: the unmarked tree (the account's) is taken for root before the download
    resumes in it, and a link in it (which the download would write through) is removed."""
    secret = tmp_path / "secret"
    secret.write_text("root data\n")
    secret.chmod(0o600)
    model_dir = tmp_path / "m"
    model_dir.mkdir()
    (model_dir / "config.json").write_text("{}\n")
    (model_dir / "model.safetensors").symlink_to(secret)
    for path in (model_dir, model_dir / "config.json", model_dir / "model.safetensors"):
        os.chown(path, 65534, 65534, follow_symlinks=False)
    proc = _run(collections_path, model_dir, False, "complete")
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert secret.read_text() == "root data\n" and (secret.stat().st_mode & 0o777) == 0o600
    assert not (model_dir / "model.safetensors").is_symlink()
    assert (model_dir / "model.safetensors").read_text() == "complete"
    info = os.stat(model_dir / "config.json")
    assert info.st_uid == 0 and info.st_mode & 0o022 == 0
    assert os.stat(model_dir).st_uid == 0
