# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""Who may talk to a vLLM instance: the API key it requires and the user namespace it runs in.

vLLM serves without authentication unless ``--api-key`` / ``VLLM_API_KEY`` is set
(vLLM docs, "OpenAI-Compatible Server", section "API key").  An instance that
listens on any address other than loopback is therefore given a key even when
the user names none: one generated on the node, kept in a root-only file next
to the instance's config, and reused on every later run.  Only an explicit
opt-out (``vllm_allow_unauthenticated``) serves an open endpoint on the network.

``PrivateUsers=`` (systemd.exec(5)) needs a kernel that lets the service manager
create a user namespace, which container runtimes usually refuse (the unit then
fails with status 217/USER), so ``auto`` turns it on everywhere except in a
container.
"""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

import ipaddress
import json
import re
from typing import Any, Dict, List, Optional

from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.engine_args import canonical_name

# What each decision means for the instance.
GIVEN = "given"          # vllm_api_key is set: that key.
STORED = "stored"        # the key generated on an earlier run, read from the key file.
GENERATE = "generate"    # a new key, written to the key file.
LOOPBACK = "loopback"    # no key: the instance listens on loopback only.
OPEN = "open"            # no key on the network: vllm_allow_unauthenticated is true.

# ansible_facts['virtualization_type'] values of container runtimes (setup module, facts/virtual/linux.py).
CONTAINER_TYPES = ("docker", "podman", "container", "containerd", "lxc", "openvz", "systemd-nspawn", "wsl")


def is_loopback(host: str) -> bool:
    """Whether ``host`` (vllm_host) is a loopback address, so only this node can connect.

    ``localhost`` counts; any other name is treated as reachable from the network,
    since what it resolves to is not known here.
    """
    name = (host or "").strip().strip("[]")
    if name.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


# Where the key could be replaced after the decision: the service environment (written after the key)
# and the engine config (an ``api-key`` option there wins over VLLM_API_KEY).
KEY_OVERRIDES = (("vllm_environment", "VLLM_API_KEY"), ("vllm_engine_args", "api-key"), ("vllm_engine_args", "api_key"))


class EndpointError(ValueError):
    """A request that would bypass the API-key decision; the message names the variable and the fix."""


def final_bind(engine_config: Dict[str, Any], environment: Dict[str, Any]) -> str:
    """The address the instance really listens on, from the final engine config; refuses key overrides.

    The decision must see the final config: ``vllm_engine_args: {host: 0.0.0.0}`` beats ``vllm_host``, and
    an entry of ``vllm_environment`` or ``vllm_engine_args`` that sets the key would replace (or, empty,
    remove) the key decided here.
    """
    sources = {"vllm_environment": environment or {}, "vllm_engine_args": engine_config or {}}
    for variable, key in KEY_OVERRIDES:
        if key in sources[variable]:
            raise EndpointError(f"{variable} sets {key}, which would replace the instance's API key (an empty value "
                                "turns authentication off). Remove it and set vllm_api_key (or leave it empty to have "
                                "a key generated); vllm_allow_unauthenticated: true is the explicit opt-out")
    host = str((engine_config or {}).get("host") or "")
    if not host:
        raise EndpointError("the engine config has no host: the plan's engine_config always sets it (vllm_host)")
    return host


def api_key_decision(given: bool, host: str, allow_unauthenticated: bool, key_file: str,
                     stored_key: Optional[str]) -> Dict[str, Any]:
    """Where the instance's API key comes from, and the sentence that says so (never the key).

    ``given``: vllm_api_key is set (the key itself never comes here).  ``stored_key`` is the
    content of ``key_file`` (None when the file does not exist).  Returns ``source`` (one of
    GIVEN, STORED, GENERATE, LOOPBACK, OPEN), ``key`` (the stored key for STORED, else '')
    and ``message``.
    """
    if given:
        return {"source": GIVEN, "key": "", "message": "the API key is vllm_api_key"}
    if is_loopback(host):
        return {"source": LOOPBACK, "key": "",
                "message": f"no API key: the instance listens on {host} only (loopback)"}
    if allow_unauthenticated:
        return {"source": OPEN, "key": "",
                "message": (f"no API key on {host}: vllm_allow_unauthenticated is true, so anyone who reaches "
                            "the port can use the instance")}
    stored = (stored_key or "").strip()
    if stored:
        return {"source": STORED, "key": stored,
                "message": f"the API key is the one generated on this node earlier, in {key_file} (root only)"}
    return {"source": GENERATE, "key": "",
            "message": (f"vllm_api_key is empty and the instance listens on {host}: a key was generated on this "
                        f"node and stored in {key_file} (root only); clients send it as 'Authorization: Bearer <key>'")}


# vLLM's own key check guards only /v1, /v2, /inference and /cohere (vllm 0.32
# vllm/entrypoints/serve/middleware/authenticate.py, GUARDED_PREFIX); /invocations, /pooling, /score, /tokenize,
# /metrics and the rest answer without the key.  The role installs this ASGI middleware beside the engine
# (roles/vllm/files/kunpeng_vllm_route_guard.py) and names it in the engine config's ``middleware`` option
# (vllm/entrypoints/serve/middleware/register.py: a class is added with app.add_middleware).
ROUTE_GUARD = "kunpeng_vllm_route_guard.RouteGuard"
# Sources with a key, whose every route the guard covers.
KEYED = (GIVEN, STORED, GENERATE)
METRICS_SOURCES_VARIABLE = "KUNPENG_VLLM_METRICS_SOURCES"
_SOURCE = re.compile(r"^[A-Za-z0-9_.:\-/]+$")


# Where a KV-events publisher may bind on an instance with a key: the host itself only (a Unix socket, loopback).
_LOCAL_ENDPOINT = re.compile(r"^(ipc|inproc)://|^tcp://(127\.[0-9.]+|localhost|\[?::1\]?)(:[0-9]+)?$")


def kv_events_problem(engine_config: Dict[str, Any], variable: str = "vllm_engine_args") -> Optional[str]:
    """Why a ``kv_events_config`` would publish beyond the host (None when it does not).

    vLLM publishes every cached block's token ids (users' prompts and
    completions) on a ZeroMQ socket, ``tcp://*:5557`` unless its ``endpoint``
    says otherwise, with no authentication (vLLM's
    vllm/distributed/kv_events.py ZmqEventPublisher), whatever address the
    API binds: only a Unix socket or loopback is accepted, on every instance
    (a loopback instance without a key too, review round 5).
    """
    for key, value in (engine_config or {}).items():
        if canonical_name(key) == "kv-events-config" and value not in (None, "", {}):
            events = value if isinstance(value, dict) else {}
            if not isinstance(value, dict):
                try:
                    events = json.loads(str(value))
                except ValueError:
                    events = {}
            endpoints = [str(events.get(field) or "") for field in ("endpoint", "replay_endpoint")]
            endpoints[0] = endpoints[0] or "tcp://*:5557"  # vLLM's default endpoint
            exposed = [point for point in endpoints if point and not _LOCAL_ENDPOINT.match(point)]
            if exposed:
                return (f"{variable} sets {key} with {', '.join(exposed)}: vLLM publishes every cached block's token "
                        "ids (the users' prompts and completions) there, with no authentication; set its endpoint "
                        "(and replay_endpoint) to ipc:// or tcp://127.0.0.1, or remove it")
    return None


def unguarded_server_problem(engine_config: Dict[str, Any], variable: str = "vllm_engine_args") -> Optional[str]:
    """Why an engine config would serve a listener the key does not guard (None when it serves none).

    ``grpc: true`` makes ``vllm serve`` start a gRPC server instead of the
    OpenAI HTTP server (vLLM's serve docs; vllm/entrypoints/cli/serve.py
    calls serve_grpc), bound to the same host and port with an insecure
    port and no API-key check: neither vLLM's --api-key nor the route guard
    (middleware of the HTTP app) ever sees a request.  A ``kv_events_config``
    that publishes beyond the host (:func:`kv_events_problem`) too.  Any
    spelling counts.
    """
    for key, value in (engine_config or {}).items():
        name = canonical_name(key)
        if name in ("grpc", "grpc-port") and value not in (None, False, "", 0, "false", "False"):
            return (f"{variable} sets {key}: vLLM then serves gRPC instead of the HTTP API, with no API-key check "
                    "(neither vLLM's own nor the route guard sees its requests); remove it, or serve without a key "
                    "only on loopback")
    return kv_events_problem(engine_config, variable)


def route_guard(source: str, engine_config: Dict[str, Any], metrics_sources: List[str]) -> Dict[str, Any]:
    """The engine config with the route guard when the instance has a key, and the guard's environment.

    Every instance with a key (GIVEN, STORED, GENERATE, i.e. always on a non-loopback bind unless the
    explicit opt-out is set) gets the guard: without it ``POST /invocations`` serves a completion to anyone.
    ``metrics_sources`` (vllm_metrics_sources: addresses, networks or host names of the Prometheus servers)
    may read ``/metrics`` without the key, as may loopback.  vLLM reads a config-file list as one option
    followed by bare words (vllm/utils/argparse_utils.py load_config_file), so ``middleware`` can carry only
    one entry: a ``middleware`` of the user's own is refused while the guard is on.  Returns ``engine_config``,
    ``enabled`` and ``environment`` (for the service's environment file).
    """
    config = dict(engine_config or {})
    if source not in KEYED:
        # no key to guard, but the token ids of the prompts published beyond the host all the same
        published = kv_events_problem(config)
        if published:
            raise EndpointError(published)
        return {"engine_config": config, "enabled": False, "environment": {}}
    unguarded = unguarded_server_problem(config)
    if unguarded:
        raise EndpointError(unguarded)
    if config.get("middleware") not in (None, [], "", ROUTE_GUARD, [ROUTE_GUARD]):
        raise EndpointError("vllm_engine_args sets middleware, but the instance's API key needs vLLM's single "
                            f"middleware slot for {ROUTE_GUARD} (the key on every route); remove it")
    bad = [str(item) for item in metrics_sources or [] if not _SOURCE.match(str(item))]
    if bad:
        raise EndpointError(f"vllm_metrics_sources must hold addresses, networks or host names, got {bad!r}")
    config["middleware"] = ROUTE_GUARD
    environment = {METRICS_SOURCES_VARIABLE: ",".join(str(item) for item in metrics_sources or [])}
    return {"engine_config": config, "enabled": True, "environment": environment}


def key_file_diff(source: str, key_file: str, existed: bool) -> Dict[str, Any]:
    """--diff of the key file for a decision: where it is and what it becomes, never the key.

    GENERATE writes the file (mode 0600); STORED starts with the path only, and the module adds the
    mode, owner and group it puts back (AnsibleModule.set_*_if_different fill them in); the other
    sources keep no file.
    """
    before: Dict[str, Any] = {"path": key_file}
    after: Dict[str, Any] = {"path": key_file}
    if source == GENERATE:
        before["state"] = "file" if existed else "absent"
        after.update(state="file", mode="0600", content="a new random key (not shown)")
    return {"before": before, "after": after}


def private_users(wanted: Any, virtualization_type: str, virtualization_role: str) -> Dict[str, Any]:
    """Whether the unit gets ``PrivateUsers=yes``: ``wanted`` true or false, or ``auto`` (off only in a container)."""
    if isinstance(wanted, bool):
        return {"enabled": wanted, "reason": f"vllm_private_users is {str(wanted).lower()}"}
    if virtualization_role == "guest" and virtualization_type in CONTAINER_TYPES:
        return {"enabled": False,
                "reason": f"vllm_private_users is auto and this host is a {virtualization_type} container (217/USER)"}
    return {"enabled": True, "reason": "vllm_private_users is auto and this host is not a container"}
