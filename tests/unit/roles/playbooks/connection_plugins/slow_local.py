# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""The local connection with a slow link: files over 1 MiB are sent at about 2 MiB/s.

The progress tests copy a few MiB through it so that a copy lasts longer
than a progress interval, as a model or an image archive does over a real link.
"""

from __future__ import annotations

import os
import time

from ansible.plugins.connection.local import Connection as LocalConnection

DOCUMENTATION = r"""
name: slow_local
short_description: The local connection, sending files over 1 MiB at about 2 MiB/s (tests only)
description:
  - The local connection with a slow put_file, for the progress tests.
author: kunpeng.vllm maintainers (@kunpeng-vllm)
"""

CHUNK = 1 << 19


class Connection(LocalConnection):
    """Local connection whose put_file of a large file takes a while."""

    transport = "slow_local"

    def put_file(self, in_path, out_path):
        if os.path.getsize(in_path) <= 1 << 20:
            return super().put_file(in_path, out_path)
        with open(in_path, "rb") as src, open(out_path, "wb") as dst:
            while chunk := src.read(CHUNK):
                dst.write(chunk)
                time.sleep(0.25)
        return None
