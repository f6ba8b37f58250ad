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
                                          "Create the cluster's Ray token on the head, once", "Read the cluster's Ray token from the head",
                                          "Give this worker the cluster's Ray token"]
    for step in steps:
        assert not {"ansible.builtin.command", "ansible.builtin.shell", "ansible.builtin.raw"} & set(step), step["name"]
        # the steps that carry the token's value hide it
        if {"ansible.builtin.copy", "ansible.builtin.slurp"} & set(step):
            assert step.get("no_log") is True, step["name"]


def _create_runs(stat):
    templar = Templar(loader=DataLoader(), variables={"__vllm_ray_token_stat": stat})
    create = task(SERVICE, "Create the cluster's Ray token on the head, once")
    return all(templar.template(trust_as_template("{{ " + condition + " }}")) in (True, "True") for condition in create["when"])


def test_the_head_makes_the_token_once_and_every_member_keeps_it_for_the_service_user():
    create = task(SERVICE, "Create the cluster's Ray token on the head, once")["ansible.builtin.copy"]
    assert create["dest"] == TOKEN
    # a token that is there is never regenerated (a re-run keeps the running cluster's token)
    assert _create_runs({"stat": {"exists": False}})
    assert _create_runs({"stat": {"exists": True, "size": 0}})
    assert not _create_runs({"stat": {"exists": True, "size": 64}})
    assert not _create_runs({"skipped": True})  # not the head
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
    assert plan["ray_allow_unauthenticated"] == "{{ vllm_cluster_ray_allow_unauthenticated }}"
    assert "kunpeng_vllm_base" in plan["firewall_default_deny"]


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
