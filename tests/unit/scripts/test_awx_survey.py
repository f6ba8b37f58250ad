"""scripts/awx_survey.py: the committed AWX survey specs are what the roles'
argument_specs generate today, in AWX's survey format, and a survey's answers
become the extra variables a job gets."""

import copy
import json
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import awx_survey  # noqa: E402

OPTIONS = awx_survey.load_options()
COMMITTED = {name: os.path.join(ROOT, "docs", "awx-surveys", f"{name}.json") for name in awx_survey.SURVEYS}
# The question types AWX accepts (awx/api/views: JobTemplateSurveySpec) and the keys each question carries.
AWX_TYPES = {"text", "textarea", "password", "integer", "float", "multiplechoice", "multiselect"}


S = awx_survey.survey_variable
PREFIX = S("")


def _target(q):
    """The role variable a question's answer sets."""
    assert q["variable"].startswith(PREFIX), q["variable"]
    return q["variable"][len(PREFIX):]


def _committed(name):
    with open(COMMITTED[name]) as f:
        return json.load(f)


@pytest.mark.parametrize("name", sorted(awx_survey.SURVEYS))
def test_committed_spec_matches_the_argument_specs(name):
    with open(COMMITTED[name]) as f:
        assert f.read() == awx_survey.render(awx_survey.build(name, OPTIONS)), \
            "out of date: run python scripts/awx_survey.py and commit docs/awx-surveys/"


def test_a_changed_argument_spec_is_drift():
    changed = copy.deepcopy(OPTIONS)
    changed["vllm"]["vllm_port"]["default"] = 8080
    assert awx_survey.render(awx_survey.build("site", changed)) != awx_survey.render(_committed("site"))


def test_check_mode_of_the_script_passes_on_the_checkout():
    assert awx_survey.main(["--check"]) == 0


def _all_options():
    return {var: spec for role in OPTIONS.values() for var, spec in role.items()}


@pytest.mark.parametrize("name", sorted(awx_survey.SURVEYS))
def test_every_variable_is_an_argument_spec_option_of_that_type(name):
    options = _all_options()
    for q in _committed(name)["spec"]:
        spec = options.get(_target(q))
        assert spec is not None, f"{q['variable']} is in no role's argument_specs"
        assert (q["type"] == "password") == bool(spec.get("no_log")), q["variable"]
        assert q["required"] == bool(spec.get("required", False)), q["variable"]
        if q["type"] == "multiplechoice":
            # The spec's choices, or those the input rule holds (vllm_backend: the backend registry's names).
            held = [awx_survey.collection_import.module_utils("plan.input_check").choices(role, _target(q))
                    for role in OPTIONS if _target(q) in OPTIONS[role]][0]
            assert q["choices"] == (spec.get("choices") or held) and q.get("default", q["choices"][0]) in q["choices"]
        if q["type"] == "integer":
            assert spec["type"] == "int" and isinstance(q.get("default", 0), int)


def test_secrets_are_password_questions():
    questions = {_target(q): q for q in _committed("site")["spec"]}
    for secret in ("vllm_api_key", "vllm_hf_token", "vllm_modelscope_token"):
        assert questions[secret]["type"] == "password" and "default" not in questions[secret]
        assert _all_options()[secret]["no_log"] is True


@pytest.mark.parametrize("name", sorted(awx_survey.SURVEYS))
def test_awx_survey_format(name):
    survey = _committed(name)
    assert set(survey) == {"name", "description", "spec"} and survey["name"] and survey["spec"]
    variables = [q["variable"] for q in survey["spec"]]
    assert len(variables) == len(set(variables)), "a variable asked twice"
    for q in survey["spec"]:
        assert {"question_name", "variable", "type", "required"} <= set(q), q
        assert q.get("default") != "", "an empty default would blank the inventory's value"
        assert q["type"] in AWX_TYPES
        assert isinstance(q["required"], bool) and q["question_name"]
        if q["type"] in ("multiplechoice", "multiselect"):
            assert isinstance(q["choices"], list) and all(isinstance(c, str) and c for c in q["choices"])
        if q["type"] in ("text", "password", "integer", "float"):
            assert q["min"] <= q["max"]
        if q["type"] in ("integer", "float") and "default" in q:
            assert q["min"] <= q["default"] <= q["max"], q["variable"]


def test_dicts_lists_and_booleans_are_refused():
    with pytest.raises(ValueError, match="vllm_engine_args"):
        awx_survey.question("vllm", "vllm_engine_args", OPTIONS["vllm"]["vllm_engine_args"], "Engine arguments")
    with pytest.raises(ValueError, match="vllm_private_users"):
        awx_survey.question("vllm", "vllm_private_users", OPTIONS["vllm"]["vllm_private_users"], "Private users")


def test_unknown_variable_is_refused():
    options = copy.deepcopy(OPTIONS)
    del options["vllm"]["vllm_port"]
    with pytest.raises(KeyError, match="vllm_port"):
        awx_survey.build("site", options)


def test_answers_become_typed_extra_vars():
    survey = _committed("site")
    extra_vars = awx_survey.answers(survey, {S("vllm_model_name"): "smollm2", S("vllm_port"): "8001",
                                             S("vllm_backend"): "cpu"})
    assert extra_vars[S("vllm_port")] == 8001 and extra_vars[S("vllm_backend")] == "cpu"
    # Unanswered optional questions send nothing: the inventory's values stand.
    assert set(extra_vars) == {S("vllm_model_name"), S("vllm_port"), S("vllm_backend")}


@pytest.mark.parametrize("blank", ["", None])
def test_awx_releases_that_send_blank_text_answers(blank):
    """awx#9525 sent "", awx#16205 null: only under survey_<variable>, which the playbooks drop when blank."""
    survey = _committed("site")
    extra_vars = awx_survey.answers(survey, {S("vllm_model_name"): "m"}, blank=blank)
    texts = {q["variable"] for q in survey["spec"] if q["type"] in ("text", "password") and not q["required"]}
    assert S("vllm_visible_devices") in texts
    assert {v: extra_vars[v] for v in texts} == dict.fromkeys(texts, blank)
    assert all(v.startswith(PREFIX) for v in extra_vars)


@pytest.mark.parametrize("name", sorted(awx_survey.SURVEYS))
def test_every_question_asks_for_a_survey_variable(name):
    """No question sets a role variable itself: a blank answer could then replace the inventory's value."""
    options = _all_options()
    for q in _committed(name)["spec"]:
        assert q["variable"].startswith(PREFIX) and _target(q) in options, q["variable"]
        assert q["variable"] not in options


@pytest.mark.parametrize("name", sorted(awx_survey.SURVEYS))
def test_an_unanswered_optional_question_sends_nothing(name):
    survey = _committed(name)
    optional = [q["variable"] for q in survey["spec"] if not q["required"]]
    assert optional and not [q["variable"] for q in survey["spec"] if not q["required"] and "default" in q]
    required = {q["variable"]: "m" for q in survey["spec"] if q["required"]}
    assert set(awx_survey.answers(survey, required)) == set(required)


# The playbooks a shipped survey is for (docs/awx.md): site.json serves site.yml and deploy.yml.
SURVEYED_PLAYBOOKS = ["playbooks/site.yml", "playbooks/deploy.yml", "playbooks/upgrade.yml"]


@pytest.mark.parametrize("path", SURVEYED_PLAYBOOKS)
def test_surveyed_playbooks_take_the_answers_first(path):
    """Before any role reads a variable, the play maps the survey's answers (blank ones left out)."""
    import yaml

    with open(os.path.join(ROOT, path)) as f:
        plays = yaml.safe_load(f)
    assert {awx_survey.SURVEYS[n][0] for n in awx_survey.SURVEYS} <= set(SURVEYED_PLAYBOOKS)
    for play in plays:
        first = (play.get("pre_tasks") or play.get("tasks"))[0]
        assert first["ansible.builtin.include_role"] == {"name": "kunpeng.vllm._common", "tasks_from": "survey_answers",
                                                         **({"apply": {"tags": ["always"]}} if "tags" in first else {})}
        assert first.get("tags", ["always"]) == ["always"], path


def _rules():
    from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import input_check
    return input_check


@pytest.mark.parametrize("name", sorted(awx_survey.SURVEYS))
def test_number_bounds_are_the_input_check_rules(name):
    roles = {variable: role for role, variable, _q in awx_survey.SURVEYS[name][2]}
    numbers = [q for q in _committed(name)["spec"] if q["type"] in ("integer", "float")]
    assert numbers
    for q in numbers:
        low, high = _rules().bounds(roles[_target(q)], _target(q))
        assert (q["min"], q["max"]) == (low, awx_survey.NUMBER_MAX if high is None else high), q["variable"]
        # The rule accepts the survey's bounds and refuses one step beyond them.
        rule = _rules().RULES[roles[_target(q)]][_target(q)]
        assert rule(q["variable"], q["min"], {}) is None and rule(q["variable"], q["min"] - 1, {})
        if high is not None:
            assert rule(q["variable"], q["max"], {}) is None and rule(q["variable"], q["max"] + 1, {})


def test_multinode_sizes_are_not_capped_at_one():
    nodes = {_target(q): q for q in _committed("site")["spec"]}["vllm_nodes"]
    assert nodes["max"] > 1 and awx_survey.answers(_committed("site"), {S("vllm_model_name"): "m", S("vllm_nodes"): "2"})


def test_a_number_without_a_range_rule_is_refused(monkeypatch):
    monkeypatch.delitem(_rules().RULES["vllm"], "vllm_port")
    with pytest.raises(ValueError, match="vllm_port has no range rule"):
        awx_survey.question("vllm", "vllm_port", OPTIONS["vllm"]["vllm_port"], "API port")


@pytest.mark.parametrize("given,needle", [
    ({}, "survey_vllm_model_name is required"),
    ({S("vllm_model_name"): "m", S("vllm_backend"): "tpu"}, "not one of"),
    ({S("vllm_model_name"): "m", S("vllm_port"): 70000}, "outside 1..65535"),
    ({S("vllm_model_name"): "m", "vllm_engine_args": {}}, "not survey variables"),
    # The role variable itself is not what the survey asks for.
    ({S("vllm_model_name"): "m", "vllm_port": 8001}, "not survey variables"),
])
def test_bad_answers_are_refused(given, needle):
    with pytest.raises((ValueError, KeyError), match=needle):
        awx_survey.answers(_committed("site"), given)
