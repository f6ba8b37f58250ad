# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""The local connection with a slow link: files over 1 MiB are sent at about 2 MiB/s.

The progress tests copy a few MiB through it so that a copy lasts longer
than a progress interval, as a model or an image archive does over a real link.
With SLOW_LOCAL_HANG set, a child process sends the first chunk and then
hangs, as an sftp on a dead link does.
"""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

import os
import subprocess
import sys
import time

from ansible.errors import AnsibleError
from ansible.plugins.connection.local import Connection as LocalConnection

DOCUMENTATION = r"""
name: slow_local
short_description: The local connection, sending files over 1 MiB at about 2 MiB/s (tests only)
description:
  - The local connection with a slow put_file, for the progress tests.
author: kunpeng.vllm maintainers (@kunpeng-vllm)
"""

CHUNK = 1 << 19
HANG = """
import sys, time
with open(sys.argv[1], "rb") as src, open(sys.argv[2], "wb") as dst:
    dst.write(src.read(1 << 19))
    time.sleep(120)
"""


class Connection(LocalConnection):
    """Local connection whose put_file of a large file takes a while."""

    transport = "slow_local"

    def put_file(self, in_path, out_path):
        if os.path.getsize(in_path) <= 1 << 20:
            return super().put_file(in_path, out_path)
        if os.environ.get("SLOW_LOCAL_HANG"):
            if subprocess.run([sys.executable, "-c", HANG, in_path, out_path], check=False).returncode:
                raise AnsibleError(f"failed to transfer file to {out_path}")
            return None
        with open(in_path, "rb") as src, open(out_path, "wb") as dst:
            while chunk := src.read(CHUNK):
                dst.write(chunk)
                time.sleep(0.25)
        return None
