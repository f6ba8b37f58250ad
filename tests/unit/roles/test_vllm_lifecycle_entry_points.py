"""The vllm role's entry points snapshot, rollback and remove, run by ansible-playbook on a directory tree.

playbooks/upgrade.yml and playbooks/uninstall.yml call these instead of
knowing the role's file layout; this runs the real task files (and the
modules they call) against a tree laid out as the role lays out a host.
"""

import json

import pytest
from playbook_run import run_playbook


def _host(root):
    for name in ("opt/0.32.0-cpu/bin", "etc", "units", "models/smollm2", "models/kept-earlier", "cache/smollm2"):
        (root / name).mkdir(parents=True)
    (root / "opt/current-smollm2").symlink_to(root / "opt/0.32.0-cpu")
    (root / "etc/smollm2.yaml").write_text("max-num-seqs: 8\nport: 8000\n")
    (root / "etc/smollm2.env").write_text("VLLM_API_KEY=abcdefabcdefabcdef\n")
    (root / "etc/smollm2.env").chmod(0o600)
    (root / "units/vllm-qwen3.service").write_text("[Service]\nExecStart=/opt/vllm/current-qwen3/bin/vllm serve /m\n")


@pytest.fixture(scope="module")
def root(collections_path, tmp_path_factory):
    """The tree after one run: snapshot, failed change, rollback, then remove."""
    root = tmp_path_factory.mktemp("host")
    _host(root)
    proc = run_playbook(collections_path, "vllm_lifecycle.yml", {
        "kv_root": str(root), "__vllm_unit_dir": str(root / "units"),
        "kunpeng_base": {"model_dir": str(root / "models")}})
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "abcdefabcdefabcdef" not in proc.stdout  # the instance's key is never shown
    return root


def test_snapshot_then_rollback_restores_link_config_and_units(root):
    facts = json.loads((root / "result-rollback.json").read_text())
    snapshot = facts["snapshot"]
    assert snapshot["venv"] == str(root / "opt/0.32.0-cpu") and snapshot["release"] == "0.32.0-cpu"
    assert snapshot["config"] == {"max-num-seqs": 8, "port": 8000}
    backup = root / "backups" / snapshot["dir"].rsplit("/", 1)[1]
    assert (backup / "current-smollm2").read_text() == f"{root}/opt/0.32.0-cpu\n"
    assert (backup / "config/smollm2.env").stat().st_mode & 0o777 == 0o600
    assert (backup / "systemd/vllm-qwen3.service").exists()
    # Rolled back: the link (the new venv stays installed), the config, the
    # key the failed attempt generated (the removal after it kept the files
    # of the config directory: no unit named an instance).
    assert facts["link"] == str(root / "opt/0.32.0-cpu") and facts["new_venv"]
    assert (root / "etc/smollm2.yaml").read_text() == "max-num-seqs: 8\nport: 8000\n"
    assert not (root / "etc/smollm2.api-key").exists()
    # Its unit did not exist at the snapshot, so nothing was restarted or checked.
    assert facts["rollback"] == {"healthy": False, "msg": "the restored instance did NOT become healthy: "
                                                          "its unit did not exist before the upgrade"}


def test_remove_takes_every_instance_engine_and_model(root):
    removed = json.loads((root / "result-remove.json").read_text())
    assert removed["remove_engines"] and removed["instances"] == []
    assert sorted(p.name for p in (root / "opt").iterdir()) == []
    assert sorted(p.name for p in (root / "models").iterdir()) == []
    assert removed["msg"].startswith("Removed instances: none found. Engine virtualenvs: removed. Models: removed ")
