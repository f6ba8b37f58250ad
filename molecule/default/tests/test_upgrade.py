"""playbooks/upgrade.yml, as run by side_effect.yml: a good change sticks, a bad one is rolled back.

side_effect.yml ran upgrade.yml three times against the converged server and
left each run's exit status and output in $MOLECULE_EPHEMERAL_DIRECTORY:
  good:    max_num_seqs 8 -> 4 (must succeed, restart and be healthy);
  refused: max_model_len 100000 > SmolLM2's 8192 positions (the planner
           refuses it before anything changes);
  crash:   max_num_batched_tokens 2 < max_num_seqs 4 (passes every static
           check, vLLM refuses it at start; upgrade.yml must restore the
           good run's state and fail).
"""

import json
import os
import urllib.error
import urllib.request

import pytest

from conftest import API_KEY, MODEL, UNIT
CONFIG = "/etc/vllm/smollm2.yaml"
BACKUP_ROOT = "/var/backups/kunpeng-vllm"
VENV = "/opt/vllm/0.32.0-cpu"


def _run(name):
    """(rc, output) of one upgrade.yml run recorded by side_effect.yml."""
    base = os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], f"upgrade-{name}")
    if not os.path.exists(base + ".rc"):
        pytest.fail(f"{base}.rc is missing: the side_effect step did not run")
    with open(base + ".rc") as f:
        rc = int(f.read().strip())
    with open(base + ".out") as f:
        return rc, f.read()


def _get_json(url):
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {API_KEY}"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read().decode())


def test_good_upgrade_succeeded_and_restarted():
    rc, out = _run("good")
    assert rc == 0, out[-3000:]
    # The config changed, so the role's handler restarted the unit, and the
    # readiness gate passed on the new config.
    assert "RUNNING HANDLER [kunpeng.vllm.vllm : Restart vLLM]" in out
    assert "failed=0" in out


def test_impossible_request_refused_before_any_change():
    rc, out = _run("refused")
    assert rc != 0, out[-3000:]
    assert "max_position_embeddings 8192" in out or "does not fit" in out, out[-3000:]
    # Failed in the plan, before the backup: nothing to roll back.
    assert "Back up the config directory" not in out
    assert "rolled back" not in out


def test_crashing_change_failed_and_was_rolled_back(host):
    rc, out = _run("crash")
    assert rc != 0, out[-3000:]
    # vLLM itself refused the settings at start (the journal, since the
    # failure's last 40 lines may show a restart in progress instead) ...
    journal = host.run(f"journalctl -u {UNIT} --no-pager -o cat").stdout
    assert "max_num_batched_tokens (2) must be greater than or equal to max_num_seqs (4)" in journal
    # ... the readiness gate caught it ...
    assert "failed at 'Wait until the instance is healthy, lists the model and answers'" in out, out[-3000:]
    # ... and upgrade.yml restored the previous state and stopped.
    assert "rolled back to 0.32.0-cpu" in out, out[-3000:]
    assert "the restored instance is healthy again" in out, out[-3000:]


def test_service_active_on_the_good_runs_config(host):
    assert host.service(UNIT).is_running
    cfg = host.file(CONFIG).content_string
    assert "max-num-seqs: 4" in cfg
    assert "max-model-len: 2048" in cfg
    assert "100000" not in cfg
    assert "max-num-batched-tokens" not in cfg


def test_server_answers_with_the_restored_settings(base_url):
    models = _get_json(base_url + "/v1/models")["data"]
    served = {m["id"]: m for m in models}
    assert MODEL in served
    # The running engine, not just the file, has the pre-upgrade limit.
    assert served[MODEL]["max_model_len"] == 2048
    req = urllib.request.Request(
        base_url + "/v1/chat/completions",
        data=json.dumps({
            "model": MODEL,
            "messages": [{"role": "user", "content": "What is the capital of France?"}],
            "max_tokens": 16,
            "temperature": 0,
        }).encode(),
        headers={"Authorization": f"Bearer {API_KEY}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(req, timeout=120) as resp:
            answer = json.loads(resp.read().decode())["choices"][0]["message"]["content"]
    except urllib.error.HTTPError as exc:
        pytest.fail(f"chat request failed: {exc.code} {exc.read()[:300]!r}")
    assert "Paris" in answer


def test_instance_link_still_on_the_previous_venv(host):
    link = host.file(f"/opt/vllm/current-{MODEL}")
    assert link.is_symlink
    assert link.linked_to == VENV


def test_backups_hold_the_state_before_each_run(host):
    stamps = sorted(host.check_output(f"ls -1 {BACKUP_ROOT}").split())
    assert len(stamps) >= 2, stamps
    # One backup per run that got past the plan: good, then crash.
    before_bad = f"{BACKUP_ROOT}/{stamps[-1]}"
    assert host.file(before_bad).mode == 0o700
    assert host.file(f"{before_bad}/current-{MODEL}").content_string.strip() == VENV
    assert host.file(f"{before_bad}/systemd/{UNIT}").exists
    saved = host.file(f"{before_bad}/config/smollm2.yaml")
    assert saved.exists
    # Taken before the crashing run: it holds the good run's value.
    assert "max-num-seqs: 4" in saved.content_string
    assert "max-num-batched-tokens" not in saved.content_string
    # cp -a kept the secrets file private.
    env = host.file(f"{before_bad}/config/smollm2.env")
    assert env.user == "root"
    assert env.mode == 0o600
