# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""Controller side of kunpeng.vllm.vllm_copy: ansible.builtin.copy that reports its progress.

A copy from the controller (a model folder, a wheelhouse or image archive of
tens of GB) is one synchronous transfer through the connection: it cannot run
as an async job, so no later task can poll it.  This action is the copy action
itself; while it works on a file (checksum, transfer, the remote copy module)
a thread prints, every ``progress_interval`` seconds, how far the file has
been read on the controller (the worker's own read or the sftp/scp process it
started) of the bytes to copy, and the elapsed time.  When the read position
has not moved for ``stall_timeout`` seconds while a process holds the file,
that process is stopped (not this worker) and the task fails naming the source.
"""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

import os
import signal
import threading
import time

from ansible.errors import AnsibleActionFail, AnsibleError
from ansible.plugins.action.copy import ActionModule as CopyAction
from ansible.utils.display import Display
from ansible_collections.kunpeng.vllm.plugins.module_utils.execute import progress

display = Display()


def _tree_bytes(path):
    if not os.path.isdir(path):
        return os.path.getsize(path)
    return sum(os.lstat(os.path.join(root, name)).st_size for root, _dirs, files in os.walk(path) for name in files)


class ActionModule(CopyAction):
    """ansible.builtin.copy with a progress line every ``progress_interval`` seconds."""

    def run(self, tmp=None, task_vars=None):
        args = self._task.args
        self._what = args.pop("what")
        self._source = args.pop("source", None) or args.get("src")
        self._interval = int(args.pop("progress_interval", 15))
        self._stall_timeout = int(args.pop("stall_timeout", 600))
        self._started = time.time()
        self._done = 0
        try:
            self._total = _tree_bytes(self._find_needle("files", args["src"]))
        except (AnsibleError, OSError):  # the copy action reports a missing source itself
            self._total = 0
        return super().run(tmp, task_vars)

    def _copy_file(self, source_full, source_rel, content, content_tempfile, dest, task_vars, follow):
        stop = threading.Event()
        host = (task_vars or {}).get("inventory_hostname", "")
        watch = {"state": None, "read": 0, "stalled": False}

        def report():
            while not stop.wait(self._interval):
                now = time.time()
                reading = progress.readers(source_full)
                position = max(reading.values(), default=None)
                # Between two reads of the file (checksum, transfer) nobody reads it: the last position stands.
                watch["read"] = watch["read"] if position is None else position
                watch["state"] = progress.advance(watch["state"], [position], now, self._started)
                done = self._done + watch["read"]
                if progress.conclude(False, watch["state"], [position], now, self._stall_timeout) == progress.STALLED:
                    # The transfer's own process (sftp, scp) is stopped; a read inside this worker cannot be.
                    for pid in reading:
                        if pid != os.getpid():
                            try:
                                os.kill(pid, signal.SIGTERM)
                            except OSError:
                                pass
                    watch["stalled"] = progress.message(progress.STALLED, self._what, self._source, done,
                                                        self._total, watch["state"], now, self._stall_timeout)
                    return
                line = progress.message(progress.RUNNING, self._what, self._source, done, self._total,
                                        watch["state"], now, 0)
                display.display(f"[{host}] {self._task.get_name()}: {line} ({source_rel})")

        ticker = threading.Thread(target=report, name="vllm_copy-progress", daemon=True)
        ticker.start()
        try:
            result = super()._copy_file(source_full, source_rel, content, content_tempfile, dest, task_vars, follow)
        except AnsibleError:
            if not watch["stalled"]:
                raise
            result = {}
        finally:
            stop.set()
            ticker.join()
        if watch["stalled"]:
            raise AnsibleActionFail(watch["stalled"])
        try:
            self._done += os.path.getsize(source_full)
        except OSError:
            pass
        return result
