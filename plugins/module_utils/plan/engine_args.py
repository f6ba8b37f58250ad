# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""Validate and normalize the options written to ``vllm serve --config``.

``vllm serve --config FILE`` turns every YAML key into ``--KEY`` and hands
the result to its argument parser, so a misspelt or retired option only shows
up when the service starts and dies in a restart loop on the target host.
Checking the dictionary on the controller, before the file is rendered, turns
that into a clear failure naming the fix.

Given the vLLM release being installed (``vllm_version``), option names are
checked against that release's own parser (``engine_options.OPTIONS_BY_RELEASE``,
captured from each release's sdist by ``scripts/matrix/capture-engine-options.py``):
an option the release lacks fails with a fix that release can carry out, and
an option it still has (``swap-space`` on 0.11) is accepted.  Without a known
release, the table below applies: the options this collection's users are
expected to set, checked against vLLM 0.32.0's parser.  The table also gives
the value shape checked for a name, whatever the release.
"""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

import difflib
import re

from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import compat_matrix
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.engine_options import OPTIONS_BY_RELEASE

# Value kinds.  YAML values reach vLLM as strings on a command line, so the
# checks mirror what its argparse types accept.
BOOL = "bool"  # a flag: true or false
INT = "int"
SIZE = "size"  # an int or a human-readable count such as "32k" / "1G"
NUMBER = "number"  # int or float
FRACTION = "fraction"  # 0 < value <= 1
PORT = "port"
STR = "str"
STR_OR_LIST = "str_or_list"  # one value or a list (nargs="+")
JSON = "json"  # a mapping (dumped to JSON by vLLM's config loader) or a JSON string

# name -> (kind, extra); extra is a tuple of choices, or for INT/SIZE the
# minimum value.
KNOWN_OPTIONS = {
    # OpenAI-compatible frontend
    "host": (STR, None),
    "port": (PORT, None),
    "uds": (STR, None),
    "api-key": (STR_OR_LIST, None),
    "api-server-count": (INT, 1),
    "headless": (BOOL, None),
    "root-path": (STR, None),
    "ssl-keyfile": (STR, None),
    "ssl-certfile": (STR, None),
    "ssl-ca-certs": (STR, None),
    "ssl-cert-reqs": (INT, 0),
    "allow-credentials": (BOOL, None),
    "allowed-origins": (STR_OR_LIST, None),
    "allowed-methods": (STR_OR_LIST, None),
    "allowed-headers": (STR_OR_LIST, None),
    "middleware": (STR_OR_LIST, None),
    "uvicorn-log-level": (STR, ("critical", "error", "warning", "info", "debug", "trace")),
    "disable-uvicorn-access-log": (BOOL, None),
    "disable-access-log-for-endpoints": (STR, None),
    "disable-fastapi-docs": (BOOL, None),
    "enable-request-id-headers": (BOOL, None),
    "log-config-file": (STR, None),
    "enable-log-requests": (BOOL, None),
    "enable-log-outputs": (BOOL, None),
    "max-log-len": (INT, 0),
    "disable-log-stats": (BOOL, None),
    "chat-template": (STR, None),
    "chat-template-content-format": (STR, ("auto", "string", "openai")),
    "response-role": (STR, None),
    "enable-auto-tool-choice": (BOOL, None),
    "tool-call-parser": (STR, None),
    "tool-parser-plugin": (STR, None),
    "lora-modules": (STR_OR_LIST, None),
    "enable-prompt-tokens-details": (BOOL, None),
    "enable-force-include-usage": (BOOL, None),
    # Model
    "model": (STR, None),
    "served-model-name": (STR_OR_LIST, None),
    "tokenizer": (STR, None),
    "tokenizer-mode": (STR, None),
    "revision": (STR, None),
    "code-revision": (STR, None),
    "tokenizer-revision": (STR, None),
    "hf-config-path": (STR, None),
    "trust-remote-code": (BOOL, None),
    "runner": (STR, ("auto", "generate", "pooling", "draft")),
    "convert": (STR, None),
    "dtype": (STR, ("auto", "half", "float16", "bfloat16", "float", "float32")),
    "seed": (INT, None),
    "max-model-len": (SIZE, -1),
    "quantization": (STR, None),
    "enforce-eager": (BOOL, None),
    "max-logprobs": (INT, -1),
    "generation-config": (STR, None),
    "override-generation-config": (JSON, None),
    "hf-overrides": (JSON, None),
    "model-impl": (STR, None),
    "skip-tokenizer-init": (BOOL, None),
    "disable-sliding-window": (BOOL, None),
    "disable-cascade-attn": (BOOL, None),
    "enable-sleep-mode": (BOOL, None),
    "allowed-local-media-path": (STR, None),
    "logits-processors": (STR_OR_LIST, None),
    "pooler-config": (JSON, None),
    "reasoning-parser": (STR, None),
    # Loading
    "load-format": (STR, None),
    "download-dir": (STR, None),
    "ignore-patterns": (STR_OR_LIST, None),
    "model-loader-extra-config": (JSON, None),
    "safetensors-load-strategy": (STR, None),
    "use-tqdm-on-load": (BOOL, None),
    # Parallelism
    "distributed-executor-backend": (STR, ("mp", "ray", "uni", "external_launcher")),
    "tensor-parallel-size": (INT, 1),
    "pipeline-parallel-size": (INT, 1),
    "decode-context-parallel-size": (INT, 1),
    "data-parallel-size": (INT, 1),
    "data-parallel-size-local": (INT, 0),
    "data-parallel-rank": (INT, 0),
    "data-parallel-start-rank": (INT, 0),
    "data-parallel-address": (STR, None),
    "data-parallel-rpc-port": (PORT, None),
    "data-parallel-backend": (STR, ("mp", "ray")),
    "data-parallel-hybrid-lb": (BOOL, None),
    "data-parallel-external-lb": (BOOL, None),
    "enable-expert-parallel": (BOOL, None),
    "enable-eplb": (BOOL, None),
    "eplb-config": (JSON, None),
    "max-parallel-loading-workers": (INT, 1),
    "disable-custom-all-reduce": (BOOL, None),
    "worker-cls": (STR, None),
    "worker-extension-cls": (STR, None),
    # KV cache
    "block-size": (INT, 1),
    "gpu-memory-utilization": (FRACTION, None),
    "kv-cache-memory-bytes": (SIZE, 0),
    "kv-cache-dtype": (STR, None),
    "num-gpu-blocks-override": (INT, 1),
    "enable-prefix-caching": (BOOL, None),
    "prefix-caching-hash-algo": (STR, ("sha256", "sha256_cbor", "xxhash", "xxhash_cbor")),
    "cpu-offload-gb": (NUMBER, None),
    # Multimodal
    "limit-mm-per-prompt": (JSON, None),
    "mm-processor-kwargs": (JSON, None),
    "mm-processor-cache-gb": (NUMBER, None),
    "media-io-kwargs": (JSON, None),
    # LoRA
    "enable-lora": (BOOL, None),
    "max-loras": (INT, 1),
    "max-lora-rank": (INT, 1),
    "max-cpu-loras": (INT, 1),
    "fully-sharded-loras": (BOOL, None),
    # Scheduler
    "max-num-seqs": (INT, 1),
    "max-num-batched-tokens": (SIZE, 1),
    "long-prefill-token-threshold": (INT, 0),
    "enable-chunked-prefill": (BOOL, None),
    "scheduling-policy": (STR, ("fcfs", "priority")),
    "async-scheduling": (BOOL, None),
    # Compilation, speculative decoding, observability, plugins
    "compilation-config": (JSON, None),
    "cudagraph-capture-sizes": (STR_OR_LIST, None),
    "max-cudagraph-capture-size": (INT, 1),
    "speculative-config": (JSON, None),
    "kv-transfer-config": (JSON, None),
    "kv-events-config": (JSON, None),
    "structured-outputs-config": (JSON, None),
    "additional-config": (JSON, None),
    "otlp-traces-endpoint": (STR, None),
    "collect-detailed-traces": (STR_OR_LIST, None),
    "show-hidden-metrics-for-version": (STR, None),
}

# Names people carry over from old guides, other tools or vLLM's internals,
# with what to write instead.  Checked before the unknown-name fallback so the
# message is the specific one.
REMOVED_OPTIONS = {
    "device": "removed in vLLM 0.10; choose devices with CUDA_VISIBLE_DEVICES / "
              "ASCEND_RT_VISIBLE_DEVICES (vllm_visible_devices)",
    "swap-space": "has no effect in the V1 engine (and is gone from current vLLM); drop it",
    "engine-use-ascend": "not a vLLM option; the installed vllm-ascend plugin selects the NPU platform itself",
    "launch-options": "not a vLLM API; write the serve options themselves as keys of vllm_engine_args",
    "worker-use-ray": "removed from vLLM; use distributed-executor-backend: ray",
    "engine-use-ray": "removed from vLLM; use distributed-executor-backend: ray",
    "vllm-host-ip": "VLLM_HOST_IP is an internal environment variable for distributed "
                    "communication, not the API bind address; use host",
    "vllm-port": "VLLM_PORT is an internal environment variable for distributed "
                 "communication, not the API port; use port",
    "disable-log-requests": "removed from vLLM; requests are not logged by default, "
                            "set enable-log-requests: true to log them",
    "task": "removed from vLLM; use runner (generate, pooling) and convert instead",
    "max-seq-len-to-capture": "removed from vLLM; CUDA graph capture is bounded by max-cudagraph-capture-size",
    "tp": "short flag, not a config key; use tensor-parallel-size",
    "pp": "short flag, not a config key; use pipeline-parallel-size",
    "dp": "short flag, not a config key; use data-parallel-size",
}

# Retired options whose fix names another option: (option the fix needs, fix),
# the first whose option the release has is given; None needs nothing.
RELEASE_FIXES = {
    "max-seq-len-to-capture": (
        ("max-cudagraph-capture-size", "CUDA graph capture is bounded by max-cudagraph-capture-size"),
        ("compilation-config", "bound CUDA graph capture with compilation-config: {cudagraph_capture_sizes: [...]}"),
    ),
    "disable-log-requests": (
        ("enable-log-requests", "requests are not logged by default, set enable-log-requests: true to log them"),
    ),
    "task": (
        ("runner", "use runner (generate, pooling) and convert instead"),
    ),
    "swap-space": (
        (None, "it has no effect in the V1 engine; drop it"),
    ),
}

# (option, option it needs, why): vLLM refuses these combinations at start-up.
REQUIRES = (
    ("enable-auto-tool-choice", "tool-call-parser", "vLLM refuses auto tool choice without a parser"),
    ("enable-log-outputs", "enable-log-requests", "vLLM logs outputs only alongside requests"),
)

_HUMAN_INT = re.compile(r"^\d+(\.\d+)?[kKmMgGtT]?$")


def canonical_name(key):
    """Return the dash spelling of an option name as vLLM's parser expects it.

    Users write ``max_model_len`` (Ansible style), ``max-model-len`` (CLI
    style), ``--max-model-len`` or copy ``LaunchOptions``-style names from
    blog posts; all map to one key so duplicates and retired names are caught
    whatever the spelling.
    """
    name = str(key).strip().lstrip("-")
    name = re.sub(r"(?<=[a-z0-9])([A-Z])", r"-\1", name)
    return name.replace("_", "-").lower()


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _describe(value):
    return f"{value!r} ({type(value).__name__})"


def check_value(name, value):
    """Return a problem description for ``value`` of option ``name``, or None.

    Only shape and range are checked; semantic checks (does this quantization
    exist?) stay with vLLM, which knows its plugins.
    """
    kind, extra = KNOWN_OPTIONS[name]
    if kind == BOOL:
        if not isinstance(value, bool):
            return f"{name} is a flag and takes true or false, not {_describe(value)}"
        return None
    if kind in (INT, SIZE):
        if _is_int(value):
            if extra is not None and value < extra:
                return f"{name} must be at least {extra}, not {value}"
            return None
        if kind == SIZE and isinstance(value, str):
            if _HUMAN_INT.match(value.strip()) or (name == "max-model-len" and value.strip().lower() == "auto"):
                return None
        expected = "an integer" if kind == INT else "an integer or a count such as '32k'"
        return f"{name} must be {expected}, not {_describe(value)}"
    if kind == NUMBER:
        if not _is_number(value) or value < 0:
            return f"{name} must be a number >= 0, not {_describe(value)}"
        return None
    if kind == FRACTION:
        if not _is_number(value) or not 0 < value <= 1:
            return f"{name} is a fraction of device memory: 0 < value <= 1, not {_describe(value)}"
        return None
    if kind == PORT:
        if not _is_int(value) or not 0 < value < 65536:
            return f"{name} must be a TCP port (1-65535), not {_describe(value)}"
        return None
    if kind == STR:
        if not isinstance(value, str) or not value:
            return f"{name} must be a non-empty string, not {_describe(value)}"
        if extra and value not in extra:
            return "{} must be one of {}, not {!r}".format(name, ", ".join(extra), value)
        return None
    if kind == STR_OR_LIST:
        items = value if isinstance(value, list) else [value]
        if not items or not all(isinstance(i, str) or _is_number(i) for i in items):
            return f"{name} takes a string or a list of strings, not {_describe(value)}"
        return None
    if kind == JSON:
        if not isinstance(value, (dict, str)):
            return f"{name} takes a mapping (or a JSON string), not {_describe(value)}"
        return None
    raise ValueError(f"unknown kind {kind!r} for {name}")


def unknown_option_message(name, options=None):
    """Explain an unknown option and suggest the nearest known names (of ``options`` when given)."""
    close = difflib.get_close_matches(name, sorted(options or KNOWN_OPTIONS), n=3, cutoff=0.6)
    hint = "did you mean {}?".format(" or ".join(close)) if close else "see `vllm serve --help=all` for the option names"
    return f"{name} is not a known vLLM serve option; {hint}"


def release_options(vllm_version):
    """The option names of vLLM ``vllm_version`` (``0.11`` is ``0.11.0``), or None for a release without data."""
    if not vllm_version:
        return None
    return next((options for release, options in OPTIONS_BY_RELEASE.items()
                 if compat_matrix.version_cmp(release, vllm_version) == 0), None)


def release_option_message(name, vllm_version, options, key=None):
    """Why ``name`` (written ``key``) fails on ``vllm_version`` (whose options are ``options``), with a fix true for that release."""
    key = name if key is None else key
    if name in RELEASE_FIXES:
        fix = next(text for needed, text in RELEASE_FIXES[name] if needed is None or needed in options)
        return f"{key} is not an option of vLLM {vllm_version}; {fix}"
    if name in REMOVED_OPTIONS:
        return f"{key} is not an option of vLLM {vllm_version}: {REMOVED_OPTIONS[name]}"
    others = sorted((release for release, names in OPTIONS_BY_RELEASE.items() if name in names), key=compat_matrix.version_key)
    close = difflib.get_close_matches(name, sorted(options), n=3, cutoff=0.6)
    if others:
        where = others[0] if len(others) == 1 else f"{others[0]} to {others[-1]}"
        hint = f"the matrix's vLLM {where} {'has' if len(others) == 1 else 'have'} it; drop it or pick such a release"
        if close:
            hint += ", or did you mean {}?".format(" or ".join(close))
    else:
        hint = "did you mean {}?".format(" or ".join(close)) if close else "see `vllm serve --help=all` for the option names"
    return f"{key} is not an option of vLLM {vllm_version}; {hint}"


def normalize_engine_args(args, vllm_version=None):
    """Check ``args`` and return ``(normalized, problems)``.

    ``normalized`` maps dash names to values, sorted by name, with ``None``
    values dropped (null means "leave vLLM's default", which lets inventories
    unset an option a group set).  ``problems`` lists every error found, so a
    user fixes them in one pass rather than one failed run each.  With
    ``vllm_version`` of a release in ``OPTIONS_BY_RELEASE``, names are checked
    against that release's options instead of the table.
    """
    options = release_options(vllm_version)
    if args is None:
        return {}, []
    if not isinstance(args, dict):
        return {}, [f"vllm_engine_args must be a mapping of option names to values, not {_describe(args)}"]
    problems = []
    seen = {}
    for key, value in args.items():
        name = canonical_name(key)
        if name in seen:
            problems.append(f"{name} is given twice (as {seen[name]!r} and {key!r}); keep one")
            continue
        seen[name] = key
        if options is not None:
            if name not in options:
                problems.append(release_option_message(name, vllm_version, options, key))
                continue
        elif name in REMOVED_OPTIONS:
            problems.append(f"{key}: {REMOVED_OPTIONS[name]}")
            continue
        elif name not in KNOWN_OPTIONS:
            problems.append(unknown_option_message(name))
            continue
        if value is not None and name in KNOWN_OPTIONS:
            problem = check_value(name, value)
            if problem:
                problems.append(problem)
    accepted = options if options is not None else KNOWN_OPTIONS
    normalized = {}
    for name in sorted(seen):
        value = args[seen[name]]
        if name in accepted and value is not None:
            normalized[name] = value
    for option, needed, why in REQUIRES:
        if normalized.get(option) is True and needed not in normalized:
            problems.append(f"{option} needs {needed}: {why}")
    return normalized, problems
