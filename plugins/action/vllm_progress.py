# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""Controller side of kunpeng.vllm.vllm_progress.

It gives the module the node's async job directory (the shell's ``async_dir``,
as ansible.builtin.async_status does), hands a finished job's own result back
as the task's result, and marks a poll that finds the job running
``_ansible_verbose_always``: the default stdout callback then prints the poll's
result (its ``msg``) after each ``FAILED - RETRYING`` line, which a module's
result cannot ask for.
"""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

from ansible.plugins.action import ActionBase


class ActionModule(ActionBase):
    """Poll an async job once through the vllm_progress module."""

    _supports_check_mode = True

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = dict(self._task.args)
        args["async_dir"] = self._remote_expand_user(self.get_shell_option("async_dir", default="~/.ansible_async"))
        polled = self._execute_module(module_name="kunpeng.vllm.vllm_progress", module_args=args,
                                      task_vars=task_vars)
        job = polled.pop("job", None)
        if job is not None:
            # The job's own result is the task's result; the progress keys say how long it took.
            progress_msg = polled.pop("msg")
            result.update(polled)
            result.update(job)
            result.setdefault("msg", progress_msg)
            result["finished"] = True
            return result
        result.update(polled)
        if not polled.get("finished", True):
            result["_ansible_verbose_always"] = True
        return result
