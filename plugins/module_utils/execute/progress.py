# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""Progress of a long step that runs as an Ansible async job.

A model download, an engine install, a wheelhouse unpack or an image load can
run for minutes to hours.  The role starts each as an async job and polls it
with kunpeng.vllm.vllm_progress every few seconds; each poll is one retry line
in ansible-playbook's output and one runner_retry event in AWX.  A copy from
the controller cannot be an async job: kunpeng.vllm.vllm_copy prints the same
lines from a thread while it runs.  These plain functions decide what a poll
says and whether the step has stalled; the callers only measure (the job's
result file, the bytes under a path, the read position of a file:
:func:`readers`, the one helper here that reads /proc) and act on the answer.
"""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

import json
import os
from typing import Any, Dict, List, Optional

# What a poll concludes.
RUNNING = "running"
FINISHED = "finished"
STALLED = "stalled"

_UNITS = (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10))


def parse_job(text: Optional[str]) -> Dict[str, Any]:
    """The async job's state from its result file (None when there is no file yet).

    async_wrapper writes ``{"started": ..., "finished": false}`` when the job
    starts and replaces it with the module's result when the job ends; a file
    that is empty or half written means the job is still running.  Returns
    ``{"finished": bool, "result": dict}`` (the result only once finished).
    """
    if not text or not text.strip():
        return {"finished": False, "result": {}}
    try:
        data = json.loads(text)
    except ValueError:
        return {"finished": False, "result": {}}
    if not isinstance(data, dict):
        return {"finished": False, "result": {}}
    if "started" in data and not data.get("failed"):
        return {"finished": bool(data.get("finished")), "result": {}}
    # The module's own result (or the wrapper's "Timeout exceeded" failure).
    result = dict(data)
    for key in ("started", "finished", "ansible_job_id", "results_file"):
        result.pop(key, None)
    return {"finished": True, "result": result}


def fd_position(fdinfo: Optional[str]) -> Optional[int]:
    """The file offset in a /proc/PID/fdinfo/N text, or None."""
    for line in (fdinfo or "").splitlines():
        key, _sep, value = line.partition(":")
        if key.strip() == "pos":
            try:
                return int(value.strip())
            except ValueError:
                return None
    return None


def readers(path: str) -> Dict[int, int]:
    """``{pid: offset}`` of the processes that have ``path`` open (the largest offset of each), from /proc.

    Linux only (the node, a Linux controller); empty where there is no /proc.
    """
    target = os.path.realpath(path)
    found = {}
    if not os.path.isdir("/proc"):
        return found
    for pid in filter(str.isdigit, os.listdir("/proc")):
        fd_dir = f"/proc/{pid}/fd"
        try:
            fds = os.listdir(fd_dir)
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(os.path.join(fd_dir, fd)) != target:
                    continue
                with open(f"/proc/{pid}/fdinfo/{fd}") as handle:
                    pos = fd_position(handle.read())
            except OSError:
                continue
            if pos is not None:
                found[int(pid)] = max(pos, found.get(int(pid), 0))
    return found


def _stat_field(stat: str, index: int) -> Optional[str]:
    """Field ``index`` after the command name of a /proc/<pid>/stat line (the name may hold spaces and
    parentheses: 0 is the state, 1 the parent pid), or None when the line is not one."""
    try:
        return stat.rsplit(")", 1)[1].split()[index]
    except IndexError:
        return None


def parent_pid(stat: str) -> Optional[int]:
    """The parent pid of a /proc/<pid>/stat line, or None when the line is not one."""
    field = _stat_field(stat, 1)
    return int(field) if field is not None and field.isdigit() else None


def ended(stat: Optional[str]) -> bool:
    """Whether the process of a /proc/<pid>/stat line (None: the file was gone) has ended; a zombie has."""
    return stat is None or _stat_field(stat, 0) in (None, "Z")


def descendants(roots: List[int], parents: Dict[int, int]) -> List[int]:
    """``roots`` and every process below them, from ``parents`` (pid -> parent pid), sorted.

    The async job's processes are found by parentage, not by process group: async_wrapper moves its
    module child into a group of its own from the watcher, after the fork, so on a loaded host the
    child can start the module (and the module its command) before the move, and those stay in the
    watcher's group.
    """
    children: Dict[int, List[int]] = {}
    for pid, parent in parents.items():
        children.setdefault(parent, []).append(pid)
    found = set(roots)
    stack = list(roots)
    while stack:
        for child in children.get(stack.pop(), []):
            if child not in found:
                found.add(child)
                stack.append(child)
    return sorted(found)


def read_position(path: str) -> Optional[int]:
    """How far a process has read ``path`` (the largest offset of any reader), or None when none has it open."""
    return max(readers(path).values(), default=None)


def human_bytes(count: int) -> str:
    """1.5 GiB, 730.0 MiB, 512 B: one decimal from KiB on."""
    for unit, size in _UNITS:
        if count >= size:
            return f"{count / float(size):.1f} {unit}"
    return f"{count} B"


def human_duration(seconds: float) -> str:
    """Elapsed time as a person reads it: 45 s, 6 min 50 s, 2 h 05 min."""
    seconds = int(max(0, seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {(seconds % 3600) // 60:02d} min"


def advance(previous: Optional[Dict[str, Any]], activity: List[Optional[int]], now: float,
            started: float) -> Dict[str, Any]:
    """The state a poll leaves for the next one.

    ``activity`` is what the poll measured, a list of counters that move while
    the step works: the bytes under its destination (or its read position) and
    the bytes its processes read and wrote (a download into a temporary folder,
    a resolver talking to an index).  A counter that cannot be read now is
    None.  ``previous`` is the last state (None on the first poll):
    ``started`` (when the job began), ``activity`` (the last value seen of
    each counter) and ``changed_at`` (when one last moved).  An unreadable
    counter keeps its last value and is not movement.
    """
    if not previous:
        return {"started": started, "activity": list(activity), "changed_at": now}
    state = dict(previous)
    last = list(previous.get("activity") or [None] * len(activity))
    if any(now_value is not None and now_value != was for was, now_value in zip(last, activity)):
        state["changed_at"] = now
    state["activity"] = [was if now_value is None else now_value for was, now_value in zip(last, activity)]
    return state


def conclude(job_finished: bool, state: Dict[str, Any], activity: List[Optional[int]], now: float,
             stall_timeout: int) -> str:
    """FINISHED, STALLED or RUNNING.

    A step stalls when one of its counters was readable now and none has
    moved for ``stall_timeout`` seconds (0 turns the check off).  A step of
    which nothing can be measured never stalls: the async time limit still
    ends it.
    """
    if job_finished:
        return FINISHED
    measured = any(value is not None for value in activity)
    if stall_timeout and measured and now - state["changed_at"] >= stall_timeout:
        return STALLED
    return RUNNING


def amount(done_bytes: Optional[int], total_bytes: int) -> str:
    """'3.2 GiB of 30.0 GiB (10 %)', '3.2 GiB so far' or '' when nothing is measured."""
    if done_bytes is None:
        return ""
    if total_bytes:
        percent = min(100, int(done_bytes * 100 // total_bytes))
        return f"{human_bytes(done_bytes)} of {human_bytes(total_bytes)} ({percent} %)"
    return f"{human_bytes(done_bytes)} so far"


def message(conclusion: str, what: str, source: str, done_bytes: Optional[int], total_bytes: int,
            state: Dict[str, Any], now: float, stall_timeout: int) -> str:
    """The line a poll prints: what runs, from where, how far, for how long."""
    elapsed = human_duration(now - state["started"])
    done = amount(done_bytes, total_bytes)
    if conclusion == STALLED:
        return (f"{what} from {source} stalled: no new bytes for {human_duration(stall_timeout)} ({done}, {elapsed}); "
                f"it was stopped. Check that {source} is reachable and serving, then run again.")
    if conclusion == FINISHED:
        return f"{what} from {source} finished after {elapsed}"
    if done:
        return f"{what} from {source}: {done}, {elapsed}"
    return f"{what} from {source}: running, {elapsed}"


def poll(job_text: Optional[str], previous: Optional[Dict[str, Any]], done_bytes: Optional[int],
         io_bytes: Optional[int], total_bytes: int, now: float, started: float, what: str, source: str,
         stall_timeout: int) -> Dict[str, Any]:
    """One poll: the conclusion, the state for the next poll, the message and the job's result.

    ``done_bytes`` is what the message shows; it and ``io_bytes`` (the job's
    processes' reads and writes) together tell movement.
    """
    job = parse_job(job_text)
    activity = [done_bytes, io_bytes]
    state = advance(previous, activity, now, started)
    conclusion = conclude(job["finished"], state, activity, now, stall_timeout)
    return {
        "conclusion": conclusion,
        "state": state,
        "msg": message(conclusion, what, source, done_bytes, total_bytes, state, now, stall_timeout),
        "result": job["result"],
    }
