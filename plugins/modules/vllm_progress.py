#!/usr/bin/python
# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

DOCUMENTATION = r"""
---
module: vllm_progress
short_description: Report the progress of a long async step and stop it when it stalls
version_added: "0.3.0"
description:
  - A model download, an engine install, a wheelhouse unpack or an image load runs as an async job (C(async), C(poll=0)).
    This module polls it once; run it in an C(until) loop with a C(delay) of at most 30 seconds. Each poll that finds
    the job running is one C(FAILED - RETRYING) line in C(ansible-playbook) output, followed by its RV(msg) (what runs,
    from where, bytes done of the total where known, elapsed time), and one C(runner_retry) event in AWX.
  - Progress is measured as the bytes under O(watch) (a download or install destination) or as how far a process has
    read O(reading) (an archive being loaded or unpacked), out of O(total_bytes) or the size of O(reading).
  - When neither that count nor the bytes the job's processes read and write (a download into a temporary folder, a
    resolver talking to an index) have moved for O(stall_timeout) seconds, the job's processes are stopped and the task
    fails with a message that names O(source).
  - Once the job has finished, returns the job's own result (its C(changed), C(rc), C(stdout), C(stderr), C(failed)) and
    removes the job's files.
  - The decisions are in C(plugins/module_utils/execute/progress.py); the action plugin of the same name passes the async
    directory.
author:
  - kunpeng.vllm maintainers (@kunpeng-vllm)
options:
  jid:
    description: The C(ansible_job_id) the async task registered (what M(ansible.builtin.async_status) reads).
    type: str
    required: true
  what:
    description: What the step does, for the message (V(model download), V(image load)).
    type: str
    required: true
  source:
    description: Where it comes from (a repository, a URL, an archive), for the message and the stall failure.
    type: str
    required: true
  watch:
    description: Paths whose bytes (files, directory trees, links not followed) count as progress.
    type: list
    elements: path
    default: []
  reading:
    description: A file some process reads; its read position counts as progress, out of its size.
    type: path
  total_bytes:
    description: Bytes expected when done; 0 when unknown.
    type: int
    default: 0
  stall_timeout:
    description: Seconds without new bytes after which the step is stopped and fails; 0 never stops it.
    type: int
    default: 600
  async_dir:
    description: The async job directory on the node; the action plugin sets it from the shell's C(async_dir).
    type: path
    default: ~/.ansible_async
attributes:
  action:
    description: Runs an action plugin of the same name on the controller.
    support: full
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
    details: It reads the job the async task started and passes on that job's result.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: none
"""

EXAMPLES = r"""
- name: Start the model download
  ansible.builtin.command:
    argv: [/opt/vllm/venv/bin/hf, download, org/model, --local-dir, /srv/models/m.partial]
  async: 86400
  poll: 0
  changed_when: false
  register: download_job

- name: Wait for the model download and report its progress
  kunpeng.vllm.vllm_progress:
    jid: "{{ download_job.ansible_job_id }}"
    what: model download
    source: huggingface org/model
    watch: [/srv/models/m.partial]
    stall_timeout: 600
  register: download
  until: download.finished
  retries: 5761
  delay: 15
  changed_when: download.changed
"""

RETURN = r"""
finished:
  description: Whether the wait is over (the job ended, or it stalled and was stopped).
  returned: always
  type: bool
msg:
  description: The progress line, such as C(model download from huggingface org/model, 3.2 GiB of 30.0 GiB (10 %), 6 min 50 s).
  returned: always
  type: str
done_bytes:
  description: Bytes counted now, or null when nothing could be measured.
  returned: always
  type: int
total_bytes:
  description: Bytes expected, 0 when unknown.
  returned: always
  type: int
elapsed:
  description: Seconds since the job started.
  returned: always
  type: int
stalled:
  description: Whether the step was stopped because its bytes did not move for O(stall_timeout) seconds.
  returned: always
  type: bool
rc:
  description: Once the job has finished, the job's own result (the module the async task ran) is the task's result,
    with these keys added; for a command that is its C(rc), C(stdout), C(stderr), C(changed) and C(failed).
  returned: when the job ran a command and finished
  type: int
"""

import json  # noqa: E402
import os  # noqa: E402
import signal  # noqa: E402
import time  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible_collections.kunpeng.vllm.plugins.module_utils.execute import progress  # noqa: E402


def tree_bytes(paths):
    """Bytes of the files under ``paths`` (links counted themselves, never followed); None if none exists."""
    total, seen = 0, False
    for top in paths:
        if not os.path.lexists(top):
            continue
        seen = True
        if not os.path.isdir(top) or os.path.islink(top):
            total += os.lstat(top).st_size
            continue
        for root, dirs, files in os.walk(top):
            for name in files + [d for d in dirs if os.path.islink(os.path.join(root, d))]:
                try:
                    total += os.lstat(os.path.join(root, name)).st_size
                except OSError:
                    pass  # removed between the listing and the stat (a temporary file renamed)
    return total if seen else None


def job_processes(jid):
    """The processes of async job ``jid``: async_wrapper's (the watcher and the module's child) and all below them."""
    prefix = jid.split(".", 1)[0]
    wrappers, parents = [], {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as handle:
                parent = progress.parent_pid(handle.read())
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                argv = handle.read().decode("utf-8", "replace").split("\0")
        except OSError:
            continue
        if parent is not None:
            parents[int(pid)] = parent
        wrapper = [i for i, arg in enumerate(argv) if arg.endswith("async_wrapper.py")]
        if wrapper and argv[wrapper[0] + 1:wrapper[0] + 2] == [prefix]:
            wrappers.append(int(pid))
    return progress.descendants(wrappers, parents)


def job_io(pids):
    """Bytes the processes ``pids`` have read and written (sockets and pipes too), or None."""
    total, seen = 0, False
    for pid in pids:
        try:
            with open(f"/proc/{pid}/io") as handle:
                fields = dict(line.split(":", 1) for line in handle.read().splitlines() if ":" in line)
            total += int(fields["rchar"]) + int(fields["wchar"])
            seen = True
        except (OSError, KeyError, ValueError):
            continue
    return total if seen else None


def stop_job(jid, pids, grace=5.0):
    """Stop the job's processes: SIGTERM to each, then SIGKILL to what is left of them (and of processes they
    started since) after ``grace`` seconds."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            pass
    deadline = time.time() + grace
    left = [pid for pid in pids if not progress.ended(_read(f"/proc/{pid}/stat"))]
    while left and time.time() < deadline:
        time.sleep(0.2)
        left = [pid for pid in left if not progress.ended(_read(f"/proc/{pid}/stat"))]
    for pid in set(left) | set(job_processes(jid)):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _read(path):
    try:
        with open(path) as handle:
            return handle.read()
    except OSError:
        return None


def main():
    module = AnsibleModule(
        argument_spec=dict(
            jid=dict(type="str", required=True),
            what=dict(type="str", required=True),
            source=dict(type="str", required=True),
            watch=dict(type="list", elements="path", default=[]),
            reading=dict(type="path"),
            total_bytes=dict(type="int", default=0),
            stall_timeout=dict(type="int", default=600),
            async_dir=dict(type="path", default="~/.ansible_async"),
        ),
        supports_check_mode=True,
    )
    params = module.params
    job_path = os.path.join(params["async_dir"], params["jid"])
    state_path = job_path + ".progress"
    job_text = _read(job_path)
    if job_text is None:
        module.fail_json(msg="vllm_progress: no async job {} in {}".format(params["jid"], params["async_dir"]),
                         finished=True)
    now = time.time()
    total = params["total_bytes"]
    if params["reading"]:
        done = progress.read_position(params["reading"])
        if not total and os.path.exists(params["reading"]):
            total = os.path.getsize(params["reading"])
    else:
        done = tree_bytes(params["watch"])
    pids = job_processes(params["jid"])
    previous_text = _read(state_path)
    previous = json.loads(previous_text) if previous_text else None
    polled = progress.poll(job_text, previous, done, job_io(pids), total, now, os.path.getmtime(job_path),
                           params["what"], params["source"], params["stall_timeout"])
    state = polled["state"]
    report = dict(msg=polled["msg"], done_bytes=done, total_bytes=total, elapsed=int(now - state["started"]),
                  stalled=polled["conclusion"] == progress.STALLED, changed=False)
    if polled["conclusion"] == progress.RUNNING:
        with open(state_path, "w") as handle:
            json.dump(state, handle)
        module.exit_json(finished=False, **report)
    if polled["conclusion"] == progress.STALLED:
        stop_job(params["jid"], pids)
    for path in (job_path, state_path):
        if os.path.exists(path):
            os.unlink(path)
    if polled["conclusion"] == progress.STALLED:
        module.fail_json(finished=True, **report)
    module.exit_json(finished=True, job=polled["result"], **report)


if __name__ == "__main__":
    main()
