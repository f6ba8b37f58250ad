# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""Read what a host shows into the evidence dict of :mod:`diagnosis` (plain functions over command output).

kunpeng.vllm.vllm_diagnose runs the commands (``ss -ltnpH``, ``systemctl show``) and reads the files
(``/proc/meminfo``, the model directory, the converge record); these functions turn their text into
the shapes the classifier reads, so they are tested from captured output without a host.
"""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

import fnmatch
import json
import re

# `ss -ltnpH`: State Recv-Q Send-Q Local-Address:Port Peer-Address:Port Process
_SS_USER = re.compile(r'\("([^"]+)",pid=(\d+)')

# What a served Hugging Face model directory holds (vLLM reads config.json, the tokenizer, the weights).
MODEL_PARTS = (
    ("config.json", ("config.json",)),
    ("a tokenizer (tokenizer.json, tokenizer.model or tokenizer_config.json)",
     ("tokenizer.json", "tokenizer.model", "tokenizer_config.json")),
    ("weights (*.safetensors, *.bin or *.gguf)", ("*.safetensors", "*.bin", "*.gguf")),
)


def parse_listeners(text):
    """``[{"port", "process", "pid"}]`` for each listening TCP socket in ``ss -ltnpH`` output.

    ``process`` and ``pid`` are None where ss could not see the owner (not root).
    """
    found = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 4 or fields[0] != "LISTEN":
            continue
        port = fields[3].rsplit(":", 1)[-1]
        if not port.isdigit():
            continue
        users = _SS_USER.findall(line)
        process, pid = (users[0][0], int(users[0][1])) if users else (None, None)
        found.append({"port": int(port), "process": process, "pid": pid})
    return found


def parse_meminfo(text):
    """``{"total_mib", "available_mib"}`` from /proc/meminfo (None where a line is missing)."""
    values = {}
    for line in text.splitlines():
        name, _sep, rest = line.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            values[name.strip()] = int(parts[0]) // 1024
    return {"total_mib": values.get("MemTotal"), "available_mib": values.get("MemAvailable")}


def use_percent(total_blocks, free_blocks_unprivileged, free_blocks):
    """df's Use%: used / (used + available to unprivileged users), rounded up as df does."""
    used = total_blocks - free_blocks
    usable = used + free_blocks_unprivileged
    if usable <= 0:
        return 0
    return -(-used * 100 // usable)


def missing_model_files(current, recorded=None):
    """What the model directory lacks: files the last converge recorded and now gone, else missing parts.

    ``current`` and ``recorded`` are scans (relative path -> [size, mtime]) as model_state.scan returns
    them; ``current`` None means the directory itself is missing.
    """
    if current is None:
        return ["the whole directory"]
    if recorded:
        gone = sorted(set(recorded) - set(current))
        if gone:
            return gone if len(gone) <= 10 else gone[:10] + [f"and {len(gone) - 10} more"]
    names = [path.rsplit("/", 1)[-1] for path in current]
    return [label for label, patterns in MODEL_PARTS
            if not any(fnmatch.fnmatch(name, pattern) for name in names for pattern in patterns)]


def unit_pids(cgroup_procs_texts):
    """The pids listed in the unit's ``cgroup.procs`` files (one text per cgroup directory)."""
    return sorted({int(tok) for text in cgroup_procs_texts for tok in text.split() if tok.isdigit()})


# systemd states of a unit whose latest run has ended (waiting to restart, failed, stopped).
_ENDED = {"auto-restart", "failed", "dead", "exited"}


def split_runs(json_lines):
    """The unit's journal (``journalctl -o json``) as runs: ``[[message, ...], ...]``, oldest first.

    A run is the lines of one invocation of the unit (journald's ``_SYSTEMD_INVOCATION_ID`` on the
    service's own lines, ``INVOCATION_ID`` on systemd's lines about it); a line without either stays
    with the run before it.  A message journald stored as bytes (not UTF-8) is decoded with
    replacement characters.
    """
    runs, current = [], None
    for line in json_lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if not isinstance(entry, dict):
            continue
        message = entry.get("MESSAGE")
        if isinstance(message, list):
            message = bytes(b for b in message if isinstance(b, int) and 0 <= b < 256).decode("utf-8", "replace")
        if not isinstance(message, str):
            continue
        invocation = entry.get("_SYSTEMD_INVOCATION_ID") or entry.get("INVOCATION_ID")
        if invocation and invocation != current:
            runs.append([])
            current = invocation
        elif not runs:
            runs.append([])
        runs[-1].append(message)
    return runs


def run_lines(runs, unit_state, answering):
    """The journal lines to classify: the latest run's, with the one before while a silent run is starting.

    A crash-looping unit keeps every earlier run's lines; an earlier run's failure (a port clash
    since cleared) must not be read as the cause of the latest one.  While the latest run is still
    starting (not ended, and the API does not answer) it has not failed yet, so the run before it,
    whose failure started the restart, is read too.
    """
    if not runs:
        return []
    ended = unit_state.get("SubState") in _ENDED or unit_state.get("ActiveState") in ("failed", "inactive")
    if ended or answering or len(runs) == 1:
        return list(runs[-1])
    return list(runs[-2]) + list(runs[-1])
