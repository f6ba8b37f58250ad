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
