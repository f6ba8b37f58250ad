"""The rolling upgrade under load (side_effect.yml): both servers upgraded, no request failed.

playbooks/upgrade.yml drained each server at the gateway (community.general.haproxy),
waited for its requests to finish, upgraded it, gated on vllm_ready and set
it ready again, one server at a time, while requests for smollm2 ran through
the gateway.  Latencies of that run against the steady state before it go to
gateway-figures.json in the ephemeral directory.
"""

import json
import os
import re

import pytest

from conftest import BACKEND_A, BACKEND_B, EPHEMERAL, GATEWAY, figures_file, sh
from load import figures

testinfra_hosts = [GATEWAY]


def _journal_span():
    """Epoch seconds of the gateway's first drain line and its last 'leaving forced maintenance' line."""
    out = sh(GATEWAY, "journalctl", "-u", "haproxy.service", "-o", "short-unix", "--no-pager", check=False).stdout
    drains = [float(ln.split()[0]) for ln in out.splitlines() if "enters drain state" in ln]
    readies = [float(ln.split()[0]) for ln in out.splitlines() if "leaving forced maintenance" in ln]
    assert drains and readies, "no drain or ready line in the gateway's journal"
    return drains[0], readies[-1]


def _records(name):
    with open(os.path.join(EPHEMERAL, name)) as f:
        return json.load(f)


@pytest.fixture(scope="module")
def upgrade_out():
    with open(os.path.join(EPHEMERAL, "upgrade.rc")) as f:
        rc = int(f.read())
    with open(os.path.join(EPHEMERAL, "upgrade.out")) as f:
        out = f.read()
    return rc, out


def test_upgrade_succeeded_on_both_servers(upgrade_out):
    rc, out = upgrade_out
    assert rc == 0, out[-3000:]
    assert "failed=0" in out
    for backend in (BACKEND_A, BACKEND_B):
        assert "max-num-seqs: 6" in sh(backend, "cat", "/etc/vllm/smollm2.yaml").stdout


def test_upgrade_drained_and_restored_each_server_at_the_gateway(upgrade_out):
    out = upgrade_out[1]
    for task in ("Drain this host at the gateways until its requests have finished",
                 "Put this host in maintenance at the gateways",
                 "Set this host ready again at the gateways"):
        # Once per server, one server at a time (tasks of the gateway role's
        # entry points drain and ready, named "<role> : <task>" in the output).
        assert len(re.findall(rf"(?m)^TASK \[(?:kunpeng\.vllm\.gateway : )?{re.escape(task)}\]", out)) == 2, task


def test_no_request_failed_during_the_upgrade():
    steady, during = figures(_records("load-steady.json")), figures(_records("load-upgrade.json"))
    report = {"steady": steady, "during_upgrade": during}
    with open(figures_file(), "w") as f:
        json.dump(report, f, indent=1)
    print(json.dumps(report))
    assert steady["failed"] == 0
    assert during["failed"] == 0, [r for r in _records("load-upgrade.json") if r["status"] != 200][:5]
    # The load ran over the whole upgrade: it started before the first drain and
    # ended after the last host was ready again (side_effect.yml stops it then).
    assert during["count"] >= 100
    first_drain, last_ready = _journal_span()
    records = _records("load-upgrade.json")
    assert records[0]["start"] < first_drain and records[-1]["end"] > last_ready
