"""The vllm role's Ray token steps (issue 29): one token per cluster, made once on the head, 0600 on every member.

The token never appears in a command line or a log: every step that reads or
writes it is no_log, none runs a command, and the unit gets it by path.  The
Ray nodes restart when their unit, their token or the engine link they run
from changed (a new engine version or a rollback).
"""

from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar
from core_compat import trust_as_template
from task_files import load, task, tasks

SERVICE = "roles/vllm/tasks/service.yml"
TOKEN = "{{ kunpeng_vllm_cluster.ray.token_path }}"


def _token_tasks():
    return [t for t in tasks(load(SERVICE)) if "token" in t["name"].lower()]


def test_every_step_with_the_token_is_no_log_and_runs_no_command():
    steps = _token_tasks()
    assert [t["name"] for t in steps] == ["Look for the cluster's Ray token on the head", "Create the Ray token file with its final mode",
                                          "Create the cluster's Ray token on the head, once (again when rotated)", "Read the cluster's Ray token from the head",
                                          "Give this worker the cluster's Ray token"]
    for step in steps:
        assert not {"ansible.builtin.command", "ansible.builtin.shell", "ansible.builtin.raw"} & set(step), step["name"]
        # the steps that carry the token's value hide it
        if {"ansible.builtin.copy", "ansible.builtin.slurp"} & set(step):
            assert step.get("no_log") is True, step["name"]


def _create_runs(stat, rotate=False):
    templar = Templar(loader=DataLoader(), variables={"__vllm_ray_token_stat": stat,
                                                      "kunpeng_vllm_cluster": {"ray": {"rotate_token": rotate}}})
    create = task(SERVICE, "Create the cluster's Ray token on the head, once (again when rotated)")
    return all(templar.template(trust_as_template("{{ " + condition + " }}")) in (True, "True") for condition in create["when"])


def test_the_head_makes_the_token_once_and_every_member_keeps_it_for_the_service_user():
    create = task(SERVICE, "Create the cluster's Ray token on the head, once (again when rotated)")["ansible.builtin.copy"]
    assert create["dest"] == TOKEN
    # a token that is there is never regenerated (a re-run keeps the running cluster's token)
    assert _create_runs({"stat": {"exists": False}})
    assert _create_runs({"stat": {"exists": True, "size": 0}})
    assert not _create_runs({"stat": {"exists": True, "size": 64}})
    assert not _create_runs({"skipped": True})  # not the head
    # vllm_cluster_ray_token_rotate (the plan's rotate_token): a new token over the one there, on the head only
    assert _create_runs({"stat": {"exists": True, "size": 64}}, rotate=True)
    assert not _create_runs({"skipped": True}, rotate=True)
    touch = task(SERVICE, "Create the Ray token file with its final mode")["ansible.builtin.file"]
    assert touch["path"] == TOKEN and touch["state"] == "touch" and touch["mode"] == "0600"
    give = task(SERVICE, "Give this worker the cluster's Ray token")["ansible.builtin.copy"]
    for step in (create, give, touch):
        assert step["mode"] == "0600" and step["owner"] == "{{ vllm_user }}" and step["group"] == "{{ vllm_group }}"
    read = task(SERVICE, "Read the cluster's Ray token from the head")
    assert read["delegate_to"] == "{{ kunpeng_vllm_cluster.head | default(inventory_hostname, true) }}" and read["ansible.builtin.slurp"]["src"] == TOKEN
    assert "{{ __vllm_ray_token.content | b64decode }}" == give["content"]


def test_the_plan_gets_the_token_path_and_the_firewall_state():
    plan = task("roles/vllm/tasks/preflight.yml", "Plan this host's part of a multi-node instance")["kunpeng.vllm.vllm_cluster"]
    assert plan["ray_token_path"] == "{{ __vllm_ray_token_file }}"
    assert plan["ray_token_rotate"] == "{{ vllm_cluster_ray_token_rotate }}"
    assert plan["ray_allow_unauthenticated"] == "{{ vllm_cluster_ray_allow_unauthenticated }}"
    # the firewall as the preflight reads it now (test_cluster_firewall), not what a base run recorded
    assert "firewall_default_deny" not in plan
    assert [probe["name"] for probe in plan["firewall_probes"]] == ["ufw", "firewalld"]


def _restart(name, **registered):
    expression = task(SERVICE, name)["vars"]["__vllm_ray_restart"]
    skipped = {"changed": False, "skipped": True}
    variables = {"__vllm_ray_unit": {"changed": False}, "__vllm_ray_token_head": skipped, "__vllm_ray_token_worker": skipped}
    variables.update(registered)
    result = Templar(loader=DataLoader(), variables=variables).template(trust_as_template(expression))
    return str(result).strip() == "True"


def test_a_ray_node_restarts_when_its_unit_its_token_or_the_engine_link_changed():
    for name, token in (("Start the Ray head", "__vllm_ray_token_head"), ("Start this worker's Ray node", "__vllm_ray_token_worker")):
        assert _restart(name) is False
        assert _restart(name, __vllm_engine_link={"changed": False}) is False
        # a new engine version (or a rollback) moves the link: the Ray node must leave the old venv
        assert _restart(name, __vllm_engine_link={"changed": True}) is True
        assert _restart(name, **{token: {"changed": True}}) is True
        assert _restart(name, __vllm_ray_unit={"changed": True}) is True


def test_a_restarted_ray_head_restarts_the_engine_that_drives_it():
    """A new token restarts the head's Ray; the engine's Ray session (and its token) went with the old head."""
    start = task(SERVICE, "Start the Ray head")
    assert start["register"] == "__vllm_ray_head_started"
    assert "__vllm_ray_token_head is changed" in start["vars"]["__vllm_ray_restart"]
    restart = task(SERVICE, "Restart the engine with the Ray head it drives")
    assert restart["notify"] == "Restart vLLM" and restart["changed_when"] is True
    assert "kunpeng_vllm_cluster.ray.executor" in restart["when"] and "__vllm_ray_head_started is changed" in restart["when"]
    names = [t["name"] for t in tasks(load(SERVICE))]
    assert names.index("Start the Ray head") < names.index("Restart the engine with the Ray head it drives") \
        < names.index("Restart the instance now when its install or config changed")


def test_ray_is_planned_into_the_engine_install_never_pip_installed_afterwards():
    """The engine is planned again with the cluster's engine_packages (Ray) once the cluster plan exists; no task
    installs Ray on its own into a virtualenv (the shared one of the release, as it did)."""
    preflight = load("roles/vllm/tasks/preflight.yml")
    plans = [t for t in tasks(preflight) if t.get("ansible.builtin.import_tasks") == "plan_engine.yml"]
    assert [t["vars"]["__vllm_plan_extra_packages"] for t in plans] == [
        "{{ vllm_extra_packages }}", "{{ vllm_extra_packages + kunpeng_vllm_cluster.engine_packages }}"]
    assert plans[1]["when"] == "kunpeng_vllm_cluster.engine_packages | length > 0"
    names = [t.get("name") for t in tasks(preflight)]
    assert names.index("Plan this host's part of a multi-node instance") < names.index(plans[1]["name"]) \
        < names.index("Complete the engine config with this member's part of a multi-node instance")
    plan = task("roles/vllm/tasks/plan_engine.yml", "Plan the engine install and check that the model fits")
    assert plan["kunpeng.vllm.vllm_plan"]["request"]["extra_packages"] == "{{ __vllm_plan_extra_packages }}"
    for path in ("roles/vllm/tasks/service.yml", "roles/vllm/tasks/install.yml", "roles/vllm/tasks/configure.yml"):
        for step in tasks(load(path)):
            assert "ray" not in str(step.get("ansible.builtin.pip", {}).get("name", "")).lower(), (path, step.get("name"))


def test_the_variables_kept_from_ray_sit_where_the_service_account_reads_but_cannot_change_them():
    """Review finding M4: vLLM reads <VLLM_CONFIG_ROOT>/ray_non_carry_over_env_vars.json; a file the service account
    could rewrite would let the engine's own code put the API key back on every Ray worker."""
    configure = "roles/vllm/tasks/configure.yml"
    folder = task(configure, "Create the engine's vLLM config directory (the variables kept from Ray's workers)")
    write = task(configure, "Write the engine variables vLLM must not copy to the Ray workers")
    drop = task(configure, "Remove the engine's vLLM config directory where the engine drives no Ray")
    assert folder["ansible.builtin.file"]["owner"] == write["ansible.builtin.copy"]["owner"] == "root"
    assert folder["ansible.builtin.file"]["mode"] == "0750" and write["ansible.builtin.copy"]["mode"] == "0640"
    assert folder["ansible.builtin.file"]["group"] == write["ansible.builtin.copy"]["group"] == "{{ vllm_group }}"
    assert write["ansible.builtin.copy"]["dest"] == "{{ __vllm_config_root }}/ray_non_carry_over_env_vars.json"
    assert folder["when"] == write["when"] == "__vllm_ray_non_carry_over | length > 0"
    assert drop["when"] == "__vllm_ray_non_carry_over | length == 0" and drop["ansible.builtin.file"]["state"] == "absent"
    # written before the environment file that points the engine at it
    names = [t["name"] for t in tasks(load(configure))]
    assert names.index(write["name"]) < names.index("Write the service environment (API key, caches, device selection)")
