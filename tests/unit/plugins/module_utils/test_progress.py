"""What one poll of a long step says and concludes (plugins/module_utils/execute/progress.py).

The job texts are what async_wrapper writes: the "started" record while the job
runs, the module's result once it ends, its own failure when the time limit
killed the job.
"""

import json
import os

import pytest

from ansible_collections.kunpeng.vllm.plugins.module_utils.execute import progress

RUNNING_JOB = json.dumps({"started": True, "finished": False, "ansible_job_id": "j1.7"})
DONE_JOB = json.dumps({"changed": True, "rc": 0, "stdout": "", "stderr": "", "cmd": ["hf", "download"],
                       "invocation": {"module_args": {}}})
FAILED_JOB = json.dumps({"changed": True, "failed": True, "rc": 2, "stderr": "401 Client Error", "msg": "non-zero"})
TIMEOUT_JOB = json.dumps({"msg": "Timeout exceeded", "failed": True, "child_pid": 12})


@pytest.mark.parametrize("text, finished, result", [
    (None, False, {}),
    ("", False, {}),
    ('{"started": tr', False, {}),  # half written
    (RUNNING_JOB, False, {}),
    (DONE_JOB, True, json.loads(DONE_JOB)),
    (FAILED_JOB, True, json.loads(FAILED_JOB)),
    (TIMEOUT_JOB, True, json.loads(TIMEOUT_JOB)),
])
def test_parse_job(text, finished, result):
    assert progress.parse_job(text) == {"finished": finished, "result": result}


@pytest.mark.parametrize("fdinfo, pos", [
    ("pos:\t1048576\nflags:\t0100000\nmnt_id:\t25\n", 1048576),
    ("pos:\t0\n", 0),
    ("flags:\t02\n", None),
    ("", None),
])
def test_fd_position(fdinfo, pos):
    assert progress.fd_position(fdinfo) == pos


@pytest.mark.parametrize("count, text", [
    (0, "0 B"), (1023, "1023 B"), (1024, "1.0 KiB"), (5 << 20, "5.0 MiB"),
    (int(3.25 * (1 << 30)), "3.2 GiB"), (700 << 30, "700.0 GiB"), (2 << 40, "2.0 TiB"),
])
def test_human_bytes(count, text):
    assert progress.human_bytes(count) == text


@pytest.mark.parametrize("seconds, text", [
    (0, "0 s"), (59.9, "59 s"), (60, "1 min 00 s"), (410, "6 min 50 s"), (3600, "1 h 00 min"), (7500, "2 h 05 min"),
])
def test_human_duration(seconds, text):
    assert progress.human_duration(seconds) == text


# previous state, activity now ([bytes done, job I/O]), now -> state left for the next poll (started = 100)
@pytest.mark.parametrize("previous, activity, now, state", [
    (None, [0, 50], 110, {"started": 100, "activity": [0, 50], "changed_at": 110}),
    (None, [None, None], 110, {"started": 100, "activity": [None, None], "changed_at": 110}),
    ({"started": 100, "activity": [5, 50], "changed_at": 110}, [9, 50], 125,
     {"started": 100, "activity": [9, 50], "changed_at": 125}),
    # Nothing written to the destination, but the job reads from the network: movement.
    ({"started": 100, "activity": [5, 50], "changed_at": 110}, [5, 80], 125,
     {"started": 100, "activity": [5, 80], "changed_at": 125}),
    # No movement: the last change time stays.
    ({"started": 100, "activity": [5, 50], "changed_at": 110}, [5, 50], 125,
     {"started": 100, "activity": [5, 50], "changed_at": 110}),
    # Unreadable now: the last values and time stay.
    ({"started": 100, "activity": [5, 50], "changed_at": 110}, [None, None], 125,
     {"started": 100, "activity": [5, 50], "changed_at": 110}),
    ({"started": 100, "activity": [5, 50], "changed_at": 110}, [None, 50], 125,
     {"started": 100, "activity": [5, 50], "changed_at": 110}),
    # A shrinking count (a temporary file renamed away, a process that ended) is movement too.
    ({"started": 100, "activity": [9, 50], "changed_at": 110}, [4, 50], 125,
     {"started": 100, "activity": [4, 50], "changed_at": 125}),
])
def test_advance(previous, activity, now, state):
    assert progress.advance(previous, activity, now, 100) == state


@pytest.mark.parametrize("finished, changed_at, activity, now, stall_timeout, conclusion", [
    (True, 0, [5, 5], 10_000, 600, progress.FINISHED),
    (False, 100, [5, 5], 699, 600, progress.RUNNING),
    (False, 100, [5, 5], 700, 600, progress.STALLED),
    (False, 100, [None, 5], 700, 600, progress.STALLED),  # only the job's I/O is readable
    (False, 100, [5, 5], 10_000, 0, progress.RUNNING),  # 0: never stopped
    (False, 100, [None, None], 10_000, 600, progress.RUNNING),  # nothing measured: no stall verdict
    (True, 100, [5, 5], 10_000, 600, progress.FINISHED),  # a job that ended is not stalled
])
def test_conclude(finished, changed_at, activity, now, stall_timeout, conclusion):
    state = {"started": 0, "activity": activity, "changed_at": changed_at}
    assert progress.conclude(finished, state, activity, now, stall_timeout) == conclusion


@pytest.mark.parametrize("conclusion, done, total, msg", [
    (progress.RUNNING, int(3.2 * (1 << 30)), 30 << 30,
     "model download from Hugging Face org/m: 3.2 GiB of 30.0 GiB (10 %), 6 min 50 s"),
    (progress.RUNNING, 5 << 20, 0, "model download from Hugging Face org/m: 5.0 MiB so far, 6 min 50 s"),
    (progress.RUNNING, None, 0, "model download from Hugging Face org/m: running, 6 min 50 s"),
    (progress.RUNNING, 40, 30, "model download from Hugging Face org/m: 40 B of 30 B (100 %), 6 min 50 s"),
    (progress.FINISHED, 5, 0, "model download from Hugging Face org/m finished after 6 min 50 s"),
    (progress.STALLED, 5 << 20, 0,
     "model download from Hugging Face org/m stalled: no new bytes for 10 min 00 s (5.0 MiB so far, 6 min 50 s); "
     "it was stopped. Check that Hugging Face org/m is reachable and serving, then run again."),
])
def test_message(conclusion, done, total, msg):
    state = {"started": 1000, "activity": [done, None], "changed_at": 1000}
    assert progress.message(conclusion, "model download", "Hugging Face org/m", done, total, state, 1410, 600) == msg


def test_poll_carries_the_state_from_one_poll_to_the_next():
    args = dict(total_bytes=0, started=100, what="image load", source="/srv/vllm.tar", stall_timeout=60)
    first = progress.poll(RUNNING_JOB, None, 10, 7, now=110, **args)
    assert first["conclusion"] == progress.RUNNING and first["result"] == {}
    second = progress.poll(RUNNING_JOB, first["state"], 10, 7, now=169, **args)
    assert second["conclusion"] == progress.RUNNING
    third = progress.poll(RUNNING_JOB, second["state"], 10, 7, now=170, **args)
    assert third["conclusion"] == progress.STALLED
    assert third["msg"].startswith("image load from /srv/vllm.tar stalled: no new bytes for 1 min 00 s (10 B so far")
    busy = progress.poll(RUNNING_JOB, second["state"], 10, 900, now=170, **args)
    assert busy["conclusion"] == progress.RUNNING and busy["msg"] == "image load from /srv/vllm.tar: 10 B so far, 1 min 10 s"
    done = progress.poll(DONE_JOB, second["state"], 10, 7, now=170, **args)
    assert done["conclusion"] == progress.FINISHED and done["result"]["rc"] == 0


def test_readers_finds_how_far_this_process_has_read_a_file(tmp_path):
    path = tmp_path / "archive.tar"
    path.write_bytes(b"x" * 10_000)
    assert progress.readers(str(path)) == {} and progress.read_position(str(path)) is None
    with open(path, "rb") as handle:
        handle.read(4096)
        assert progress.readers(str(path)) == {os.getpid(): 4096}
        assert progress.read_position(str(path)) == 4096


@pytest.mark.parametrize("stat, parent", [
    ("4242 (sleep) S 4200 4100 4100 0 -1 4194560", 4200),
    # a command name with spaces and parentheses
    ("77 (python3 (x) y) R 1 77 77 0 -1 4194304", 1),
    ("", None),
    ("12 (sh)", None),
])
def test_parent_pid(stat, parent):
    assert progress.parent_pid(stat) == parent


@pytest.mark.parametrize("stat, ended", [
    ("4242 (sleep) S 4200 4100 4100 0 -1 4194560", False),
    ("4242 (sleep) R 4200 4100 4100 0 -1 4194560", False),
    ("4242 (sleep) Z 4200 4100 4100 0 -1 4194560", True),
    ("77 (a (Z) b) S 1 77 77 0 -1 4194304", False),
    (None, True),
    ("12 (sh)", True),
])
def test_ended(stat, ended):
    assert progress.ended(stat) is ended


# async_wrapper's daemon 100 (the watcher, in group 100) forks the module's child 101; on a loaded host the
# child starts the module 102 before the watcher moves it to group 101, so the module and its command 103
# (hf, and the sleep it execs) stay in group 100.  An unrelated process 200 runs beside them.
PARENTS = {100: 1, 101: 100, 102: 101, 103: 102, 104: 103, 200: 1, 201: 200}


@pytest.mark.parametrize("roots, found", [
    ([100], [100, 101, 102, 103, 104]),
    ([101], [101, 102, 103, 104]),
    ([100, 101], [100, 101, 102, 103, 104]),
    ([], []),
    ([999], [999]),  # a wrapper that ended between the two reads: itself only
])
def test_descendants_follow_parentage_not_groups(roots, found):
    assert progress.descendants(roots, PARENTS) == found
