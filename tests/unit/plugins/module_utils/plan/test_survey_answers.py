"""AWX survey answers: a blank one (``""``, null, all spaces, an empty selection) never becomes a role variable."""

import pytest

from ansible_collections.kunpeng.vllm.plugins.filter.survey_answers import survey_answers as survey_filter
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.survey_answers import survey_answers
from ansible.errors import AnsibleFilterError


@pytest.mark.parametrize(("given", "expected"), [
    # Blank optional text questions as AWX has sent them: "" (awx#9525) and null (awx#16205).
    ({"survey_vllm_visible_devices": ""}, {}),
    ({"survey_vllm_visible_devices": None}, {}),
    ({"survey_vllm_visible_devices": "   "}, {}),
    ({"survey_vllm_visible_devices": []}, {}),
    # A real answer, kept with its type.
    ({"survey_vllm_visible_devices": "2,3"}, {"vllm_visible_devices": "2,3"}),
    ({"survey_vllm_port": 8001}, {"vllm_port": 8001}),
    ({"survey_vllm_cpu_kvcache_space_gib": 0.5}, {"vllm_cpu_kvcache_space_gib": 0.5}),
    # 0 and "0" are answers, not blanks.
    ({"survey_vllm_nodes": 0, "survey_vllm_version": "0"}, {"vllm_nodes": 0, "vllm_version": "0"}),
    ({"survey_vllm_model_name": "ds", "survey_vllm_host": "", "survey_vllm_api_key": None},
     {"vllm_model_name": "ds"}),
    ({}, {}),
])
def test_survey_answers_keep_only_what_was_answered(given, expected):
    assert survey_answers(given) == expected
    assert survey_filter(given) == expected


@pytest.mark.parametrize("name", ["vllm_port", "survey_", "surveyvllm_port"])
def test_a_name_without_the_survey_prefix_is_refused(name):
    with pytest.raises(ValueError, match=repr(name)):
        survey_answers({name: 1})
    with pytest.raises(AnsibleFilterError, match="is not a survey variable"):
        survey_filter({name: 1})
