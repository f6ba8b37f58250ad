"""The rehearsal decision (plugins/module_utils/plan/rehearsal.py), as a table.

Each row: the requested engine options, the model directory's listing (None: not listed, a hub download),
and what the role must do - refuse before any change, or run with or without skip_tokenizer_init.
"""

import pytest

from ansible_collections.kunpeng.vllm.plugins.filter.vllm_rehearsal import FilterModule
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import rehearsal
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.capacity import PlanError

CONFIG_ONLY = ["config.json"]
WITH_TOKENIZER = ["config.json", "tokenizer.json", "tokenizer_config.json"]
FULL = ["config.json", "generation_config.json", "model-00001-of-00004.safetensors", "model.safetensors.index.json",
        "tokenizer.json", "tokenizer_config.json"]
SENTENCEPIECE_BIN = ["config.json", "pytorch_model.bin", "tokenizer.model"]
GGUF_NESTED = ["config.json", "gguf/model.Q4_K_M.gguf", "vocab.json", "merges.txt"]
TOKENIZER_CONFIG_ONLY = ["config.json", "tokenizer_config.json", "special_tokens_map.json"]

DUMMY = {"load_format": "dummy"}

# engine args, files -> enabled, weights, tokenizer, skip_tokenizer_init (None: refused with PlanError)
TABLE = [
    # the DeepSeek-V2-Lite rehearsal: config.json alone, load_format dummy
    (DUMMY, CONFIG_ONLY, True, False, False, True),
    ({"load-format": "dummy"}, CONFIG_ONLY, True, False, False, True),  # dashed, as vllm serve spells it
    ({"load_format": "DUMMY"}, CONFIG_ONLY, True, False, False, True),
    # a tokenizer at hand: the engine keeps it
    (DUMMY, WITH_TOKENIZER, True, False, True, False),
    # tokenizer_config.json alone builds no tokenizer
    (DUMMY, TOKENIZER_CONFIG_ONLY, True, False, False, True),
    # a tokenizer from elsewhere, or the operator's own choice, wins
    (dict(DUMMY, tokenizer="/srv/tokenizers/deepseek"), CONFIG_ONLY, True, False, False, False),
    (dict(DUMMY, skip_tokenizer_init=False), CONFIG_ONLY, True, False, False, False),
    (dict(DUMMY, skip_tokenizer_init=True), WITH_TOKENIZER, True, False, True, True),
    # dummy over real weights: still a rehearsal (the weights are not read)
    (DUMMY, FULL, True, True, True, False),
    # a hub download is not listed: only the request counts
    (DUMMY, None, True, None, None, False),
    ({}, None, False, None, None, False),
    # real deployments
    ({}, FULL, False, True, True, False),
    ({"load_format": "auto"}, SENTENCEPIECE_BIN, False, True, True, False),
    ({}, GGUF_NESTED, False, True, True, False),
    ({"max_model_len": 4096, "skip_tokenizer_init": True}, FULL, False, True, True, True),
    # a weightless directory outside a rehearsal is refused
    ({}, CONFIG_ONLY, None, None, None, None),
    ({"load_format": "safetensors"}, WITH_TOKENIZER, None, None, None, None),
    ({}, [], None, None, None, None),
]


@pytest.mark.parametrize("args, files, enabled, weights, tokenizer, skip", TABLE)
def test_rehearsal_table(args, files, enabled, weights, tokenizer, skip):
    if enabled is None:
        with pytest.raises(PlanError) as err:
            rehearsal.rehearsal(args, files)
        # the message names the variable and the fix
        assert "vllm_engine_args.load_format: dummy" in str(err.value)
        assert "vllm_model_src" in str(err.value)
        assert "not real" in str(err.value)
        return
    got = rehearsal.rehearsal(args, files)
    assert (got["enabled"], got["weights"], got["tokenizer"], got["skip_tokenizer_init"]) == (enabled, weights, tokenizer, skip)
    assert got["prompt_token_ids"] == (rehearsal.PROMPT_TOKEN_IDS if skip else None)
    assert ("not real" in got["reason"]) == enabled


def test_refusal_names_what_was_set():
    with pytest.raises(PlanError, match="load_format is safetensors"):
        rehearsal.rehearsal({"load_format": "safetensors"}, CONFIG_ONLY)
    with pytest.raises(PlanError, match="load_format is not set"):
        rehearsal.rehearsal(None, CONFIG_ONLY)


def test_listing_may_be_the_install_state_scan():
    """The role passes install_state's files (a dict of relative path -> [size, mtime]); its keys are the paths."""
    scan = {"config.json": [1530, 1764000000], "tokenizer.json": [4600000, 1764000000]}
    got = rehearsal.rehearsal(DUMMY, scan)
    assert (got["weights"], got["tokenizer"], got["skip_tokenizer_init"]) == (False, True, False)


# The filter the role's rollback uses on a recorded engine config (dashed names, as vllm serve --config reads it).
@pytest.mark.parametrize("config, enabled, token_ids", [
    ({"load-format": "dummy", "skip-tokenizer-init": True, "host": "127.0.0.1"}, True, rehearsal.PROMPT_TOKEN_IDS),
    ({"load-format": "dummy"}, True, None),
    ({"max-model-len": 4096}, False, None),
    ({}, False, None),
    (None, False, None),
])
def test_filter_on_an_engine_config(config, enabled, token_ids):
    got = FilterModule().filters()["vllm_rehearsal"](config)
    assert (got["enabled"], got["prompt_token_ids"]) == (enabled, token_ids)
    assert got["weights"] is None and got["tokenizer"] is None
