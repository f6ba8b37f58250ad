# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""Which hosts an upgrade may take out of service at once (playbooks/upgrade.yml).

A batch (``upgrade_serial``) is drained at every gateway before it is
touched.  A batch that holds every server of a gateway pool leaves that pool
nothing to send its requests to: each request for its models fails until
the batch is back.  ``batch_problem`` refuses such a batch, naming the
variable; a pool of one server (one host, or one multi-node instance) cannot
be upgraded without a gap whatever the serial, so it is not refused.  The
members of a multi-node instance are one server: they stop and start
together.
"""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

from typing import Any, Dict, Iterable, List, Mapping


def _server(host: str, cluster_of: Mapping[str, str]) -> str:
    """The serving unit of ``host``: its multi-node instance's group, or the host itself."""
    group = str(cluster_of.get(host) or "")
    return f"{group} (multi-node)" if group else host


def batch_problem(batch: Iterable[str], pools: Iterable[Mapping[str, Any]], groups: Mapping[str, List[str]],
                  cluster_of: Mapping[str, str], serial: Any = 1) -> str:
    """Why ``batch`` may not go out of service at once ('' when it may).

    ``pools`` are the gateways' ``gateway_pools`` (each names its inventory
    ``group``), ``groups`` the inventory's groups, ``cluster_of`` each host's
    ``vllm_cluster_group`` ('' for a host that serves alone), ``serial`` the
    ``upgrade_serial`` in force.
    """
    in_batch = {_server(host, cluster_of) for host in batch}
    problems: List[str] = []
    seen = set()
    for pool in pools:
        group = str(pool.get("group") or "")
        key = (str(pool.get("name") or group), group)
        if not group or key in seen:
            continue
        seen.add(key)
        servers: Dict[str, List[str]] = {}
        for host in groups.get(group) or []:
            servers.setdefault(_server(host, cluster_of), []).append(host)
        if len(servers) < 2 or not set(servers) <= in_batch:
            continue
        listing = ", ".join(sorted(servers))
        problems.append(f"gateway pool {key[0]!r} (group {group}: {listing}) would have no server left while this batch "
                        f"upgrades; its {len(servers)} servers must not all be in one batch")
    if not problems:
        return ""
    return (f"upgrade: upgrade_serial {serial} puts {', '.join(sorted(batch))} in one batch, and {'; '.join(problems)}. "
            "Set upgrade_serial below the size of the smallest pool (1 upgrades one server at a time), or split the "
            "upgrade with upgrade_hosts.")
