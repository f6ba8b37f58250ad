"""playbooks/site.yml run as an AWX job template runs it (side_effect.yml ->
awx_job.py): ansible_runner with a private_data_dir, the collection installed
from its tarball, extra variables from the generated site survey's answers.
On the converged container the job succeeds and changes nothing."""

import json
import os

import pytest


@pytest.fixture(scope="module")
def job():
    path = os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], "awx-job.json")
    if not os.path.exists(path):
        pytest.fail(f"{path} is missing: the side_effect step did not run the AWX-style job")
    with open(path) as f:
        return json.load(f)


def _output():
    with open(os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], "awx-job.out")) as f:
        return f.read()


def test_job_successful(job):
    assert (job["status"], job["rc"]) == ("successful", 0), _output()[-4000:]


def test_job_changed_nothing_on_the_converged_host(job):
    stats = job["stats"]
    assert "kv-default-amd64" in stats["ok"]
    assert not stats["failures"] and not stats["dark"]
    assert not any(stats["changed"].values()), _output()[-4000:]


def test_job_ran_the_installed_collection_with_survey_answers(job):
    assert job["collection_version"]
    # The roles came from the collection installed from the tarball, not from the checkout.
    assert job["collections_path"] == os.path.join(job["private_data_dir"], "collections")
    # The survey's names: site.yml maps each answer that is not blank onto its role variable.
    assert {"survey_vllm_model_name", "survey_vllm_backend", "survey_vllm_api_key", "survey_vllm_port"} \
        <= set(job["extravars"])
    assert not [v for v in job["extravars"] if not v.startswith("survey_")]
    # Unanswered questions send nothing (no survey defaults), so the inventory's values stand.
    assert not {"survey_vllm_ready_timeout", "survey_vllm_model_params_b", "survey_vllm_nodes"} & set(job["extravars"])
    # The job planned this instance and found the converged host holding that plan (the fast path).
    assert "smollm2: converged, nothing to do" in _output()
