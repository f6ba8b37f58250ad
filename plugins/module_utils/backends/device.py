# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""What every accelerator backend decides alike: capacity per device, a replica per node's devices.

A backend with devices (``cuda``, ``ascend``) derives from :class:`Device`; what differs
per device stays in its own file.  A backend that derives from
:class:`~.base.Backend` alone is refused on each of these decisions by name.
"""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.kunpeng.vllm.plugins.module_utils.backends.base import Backend
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import capacity


class Device(Backend):
    """An accelerator whose memory the capacity planner splits over tensor and pipeline parallel ranks."""

    # The memory basis (capacity.PROBED_BASIS describes the record) per device series the probe shows
    # (``series()``; ``None``: any other or unknown series).  A device backend without one is refused by name.
    memory_basis: Dict[Optional[str], Dict[str, Any]] = {}

    def basis(self, series: Optional[str]) -> Dict[str, Any]:
        """The memory basis of ``series``, else the backend's default."""
        found = self.memory_basis.get(series) or self.memory_basis.get(None)
        if found is None:
            raise self._missing("memory_basis")
        return found

    def serve_dtype(self, facts: Dict[str, Any], model: Optional[Dict[str, Any]],
                    requested: Dict[str, Any]) -> Tuple[Optional[str], str]:
        # vLLM's auto (the checkpoint's 16-bit dtype); an Atlas series without bf16 is the series limits' decision
        return None, "vLLM's dtype auto"

    def plan_capacity(self, model: Dict[str, Any], hw: Dict[str, Any], requested: Dict[str, Any],
                      options: Dict[str, Any], notes: List[str]) -> Optional[Dict[str, Any]]:
        if hw["device_memory_mib"] and hw["devices_per_node"]:
            hw = dict(hw, memory_basis=self.basis(options.get("atlas_series")))
            result = capacity.plan_accelerator(model, hw, requested, options)
            pp = result["engine_args"]["pipeline_parallel_size"]
            if not model["layers"] and pp > 1:
                notes.append(capacity.UNKNOWN_LAYERS_NOTE.format(pp=pp))
            return dict(result, misfit=None if result["fits"] else capacity.misfit_message(model, result, hw, on_host=False))
        notes.append("Device count or memory unknown (driver not ready?): capacity not checked "
                     "(set devices_per_node and device_memory_mib).")
        return None

    def runtime(self, facts: Dict[str, Any], requested: Dict[str, Any], request: Dict[str, Any]) -> Optional[Dict[str, Any]]:
        return None

    def layout_problem(self, tp: int, pp: int, executor: str) -> Optional[str]:
        return None

    def devices_per_node(self, count: int) -> int:
        return max(count, 1)

    def k8s_multinode_problem(self) -> Optional[str]:
        return None


def refuse_host_torch(name: str, request: Dict[str, Any]) -> None:
    """vllm_reuse_host_torch is for a host whose CUDA torch is already there; other backends install their own."""
    if request["reuse_host_torch"]:
        raise capacity.PlanError(f"vllm_reuse_host_torch reuses an NVIDIA host's CUDA torch; the {name} backend installs its "
                                 "own. Set vllm_reuse_host_torch: false")
