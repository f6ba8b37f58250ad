"""Stopping the vLLM unit fires VllmInstanceDown within its for: time, one scrape and one evaluation."""

import json
import os
import time

from conftest import EVALUATION_S, INSTANCE_DOWN_FOR_S, SCRAPE_S, UNIT, VLLM, query, sh, wait_for

FIRING = 'ALERTS{alertname="VllmInstanceDown", alertstate="firing"}'


def test_stopping_vllm_fires_instance_down():
    assert query(FIRING) == []
    sh(VLLM, "systemctl", "stop", UNIT)
    stopped = time.monotonic()
    bound = INSTANCE_DOWN_FOR_S + SCRAPE_S + EVALUATION_S
    firing, waited = wait_for(lambda: query(FIRING), bound + 10, step=0.25)
    waited = time.monotonic() - stopped
    record = {"alert_seconds_after_stop": round(waited, 2), "bound_seconds": bound}
    ephemeral = os.environ.get("MOLECULE_EPHEMERAL_DIRECTORY")
    if ephemeral:
        with open(os.path.join(ephemeral, "monitoring-alert.json"), "w") as handle:
            json.dump(record, handle)
    print(record)
    assert firing, f"VllmInstanceDown did not fire within {bound + 10} s"
    assert firing[0]["metric"]["instance"] == f"{VLLM}:8000"
    assert waited <= bound + 0.5, record
