# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001


class ModuleDocFragment:
    """The directories of the vllm role's layout that the instance modules read."""

    DOCUMENTATION = r"""
options:
  install_dir:
    description: Root of the engine virtualenvs and the instances' links (C(vllm_install_dir)).
    type: path
    required: true
  config_dir:
    description: Engine config and environment files (C(vllm_config_dir)).
    type: path
    required: true
  unit_dir:
    description: Where the units are.
    type: path
    default: /etc/systemd/system
"""
