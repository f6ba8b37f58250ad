"""Stopping the vLLM unit fires VllmInstanceDown within its for: time plus one scrape and one evaluation."""

import json
import os
import time

from conftest import EVALUATION_S, INSTANCE_DOWN_FOR_S, SCRAPE_S, UNIT, VLLM, query, sh, wait_for

FIRING = 'ALERTS{alertname="VllmInstanceDown", alertstate="firing"}'


def test_stopping_vllm_fires_instance_down():
    assert query(FIRING) == []
    before = time.monotonic()
    sh(VLLM, "systemctl", "stop", UNIT)
    stopped = time.monotonic()
    bound = INSTANCE_DOWN_FOR_S + SCRAPE_S + EVALUATION_S
    firing, _waited = wait_for(lambda: query(FIRING), bound + 10, step=0.25)
    fired = time.monotonic()
    record = {"stop_seconds": round(stopped - before, 2), "alert_seconds_after_stop": round(fired - stopped, 2),
              "alert_seconds_after_stop_began": round(fired - before, 2), "bound_seconds": bound}
    ephemeral = os.environ.get("MOLECULE_EPHEMERAL_DIRECTORY")
    if ephemeral:
        with open(os.path.join(ephemeral, "monitoring-alert.json"), "w") as handle:
            json.dump(record, handle)
    print(record)
    assert firing, f"VllmInstanceDown did not fire within {bound + 10} s of the unit's stop"
    assert [alert["metric"]["instance"] for alert in firing] == [f"{VLLM}:8000"]
    # Not before the for: time (the target cannot have gone down before the stop began) ...
    assert fired - before >= INSTANCE_DOWN_FOR_S, record
    # ... and within for: + one scrape + one evaluation of the unit being stopped.
    assert fired - stopped <= bound + 0.5, record
