"""The playbooks run as an installed collection would run them: by FQCN, from
any working directory, and write their reports there, never inside the
collection (read-only when installed in an execution environment)."""

import json
import os
import subprocess
import sys

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar
from core_compat import trust_as_template
from ansible.utils.collection_loader import AnsibleCollectionRef

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAYBOOKS = sorted(f[:-4] for f in os.listdir(os.path.join(ROOT, "playbooks")) if f.endswith(".yml"))


@pytest.mark.parametrize("name", PLAYBOOKS)
def test_playbook_has_a_valid_fqcn(name):
    assert AnsibleCollectionRef.is_valid_fqcr(f"kunpeng.vllm.{name}", "playbook"), name


def test_nvidia_adopt_playbook_is_there():
    assert "nvidia_adopt" in PLAYBOOKS


def _play_var(playbook, var):
    with open(os.path.join(ROOT, "playbooks", playbook)) as f:
        return trust_as_template(yaml.safe_load(f)[0]["vars"][var])


@pytest.mark.parametrize("playbook,var,default", [
    ("probe.yml", "__probe_report_dir", "reports"),
    ("benchmark.yml", "__bench_report_dir", "reports/benchmark"),
])
def test_report_dir_defaults_to_the_working_directory(tmp_path, monkeypatch, playbook, var, default):
    monkeypatch.chdir(tmp_path)
    templar = Templar(loader=DataLoader(), variables={})
    assert templar.template(_play_var(playbook, var)) == str(tmp_path / default)


@pytest.mark.parametrize("playbook,var,user_var", [
    ("probe.yml", "__probe_report_dir", "probe_report_dir"),
    ("benchmark.yml", "__bench_report_dir", "benchmark_report_dir"),
])
def test_report_dir_variable_wins(tmp_path, playbook, var, user_var):
    templar = Templar(loader=DataLoader(), variables={user_var: str(tmp_path / "elsewhere")})
    assert templar.template(_play_var(playbook, var)) == str(tmp_path / "elsewhere")


def test_probe_by_fqcn_writes_reports_in_the_callers_directory(tmp_path, collections_path):
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections_path, ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_RETRY_FILES_ENABLED="0")
    ansible_playbook = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    proc = subprocess.run([ansible_playbook, "-i", "localhost,", "-c", "local",
                           "-e", json.dumps({"ansible_python_interpreter": sys.executable}), "kunpeng.vllm.probe"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    report = json.loads((tmp_path / "reports" / "localhost.json").read_text())
    assert report["summary"]["backend"] in ("cpu", "cuda", "ascend")
    assert (tmp_path / "reports" / "summary.txt").read_text().startswith("HOST")
