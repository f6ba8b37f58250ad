# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""The gateway's plan: which vLLM instances form which pool, with which weights, for which models.

The kunpeng.vllm.gateway role puts HAProxy in front of the vLLM instances of
some inventory groups.  Everything it decides is decided here, from the
role's variables and the inventory, and the haproxy.cfg template only writes
the result down:

- ``gateway_pools``: each pool is an inventory group (its hosts are the
  pool's backends, one HAProxy ``server`` each, named after the inventory
  host) and the OpenAI ``model`` names it serves.  A request is routed by
  the ``model`` field of its JSON body to the pool that serves that model.
- a pool's canary: ``canary_hosts`` (hosts of the pool) get
  ``canary_percent`` % of the pool's requests between them, the other hosts
  the rest.  HAProxy's round-robin honours integer weights (0-256); the
  weights here are the smallest integers with exactly that ratio (or the
  closest ratio that fits in 256).
- ``gateway_default_pool``: where a request with a model that no pool
  serves goes; empty means such a request gets a 404 naming the model
  (the OpenAI ``model_not_found`` error) and a request without a model
  (``GET /v1/models``) goes to the first pool.
- hybrid serving: one model served by a ``cpu`` pool and an
  ``accelerator`` pool (each pool's ``kind``) behind the same name.  A
  request whose estimated size (body bytes / ``bytes_per_token`` plus its
  ``max_tokens``) is below ``size_tokens`` goes to the CPU pool while fewer
  than ``load`` x its capacity (usable servers x ``maxconn``) requests are
  in it; everything else goes to the accelerator pool, whose servers take
  ``maxconn`` requests each and queue the rest in HAProxy (up to
  gateway_timeout_queue, then 503 with Retry-After).
- a pool's ``standby``: another pool serving the same models (x86 hosts for
  a Kunpeng pool, say) whose servers are the pool's HAProxy ``backup``
  servers: they take its traffic when none of its own servers is up, and
  give it back when one is.  A standby pool is not routed to on its own.
- keys: a gateway with an empty ``gateway_api_keys`` checks no key and
  passes the Authorization header on, so each backend must check its own.
  Whether it does is the vllm role's endpoint decision
  (:mod:`endpoint_security`), taken here from the backend's inventory: a
  backend on loopback or with ``vllm_allow_unauthenticated`` has no key, and
  such a backend behind a keyless gateway on the network is refused.

Bad values fail before anything changes, with the variable named.
"""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

import re
from math import ceil, gcd

from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import endpoint_security
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan.engine_args import canonical_name

# HAProxy's runtime and configuration accept weights 0..256 (configuration
# manual, "weight <weight>").
MAX_WEIGHT = 256
# The configuration uses json_query, http_auth_bearer and "http-request return",
# which came with HAProxy 2.5 (Debian 12 has 2.6, Ubuntu 24.04 2.8; Ubuntu
# 22.04 and EL 9 have 2.4).
MIN_HAPROXY = (2, 5)
# The shortest API key the collection accepts, the gateway's keys and vLLM's alike (plan/input_check.py).
API_KEY_MIN_LENGTH = 16
_HAPROXY_VERSION = re.compile(r"HA-?Proxy version ([0-9]+)\.([0-9]+)(\S*)")

# Names that end up in haproxy.cfg unquoted (server and backend names: HAProxy
# allows letters, digits, '-', '_', '.', ':'); model names are matched as
# strings, so only characters that need no quoting in an ACL are accepted.
_SERVER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,62}$")
_POOL_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$")
_MODEL_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,127}$")
_ADDRESS = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.:_-]{0,252}$")

POOL_KEYS = ("name", "group", "models", "canary_hosts", "canary_percent", "kind", "maxconn", "standby")
POOL_KINDS = ("cpu", "accelerator")

# Dispatch policy defaults: the NVIDIA deployment guide's rule (section 4.2):
# fewer than 512 tokens to the Kunpeng CPUs while their load is below 0.7.
# 4 bytes of request body per token is the usual estimate for English text
# with a BPE tokenizer (the role README says how far off it can be).
DISPATCH_DEFAULTS = {"size_tokens": 512, "load": 0.7, "bytes_per_token": 4, "retry_after": 10}


class GatewayError(ValueError):
    """A gateway variable that cannot work; the message names it and the fix."""


def backend_name(pool):
    """HAProxy backend section of a pool."""
    return "pool_" + pool


def canary_weights(percent, n_canary, n_stable):
    """Per-server weights so that ``n_canary`` servers get ``percent`` % of the requests.

    Returns ``(canary_weight, stable_weight, effective_percent)``.  With both
    kinds present the exact ratio is canary_w * n_canary : stable_w * n_stable
    = percent : 100 - percent, reduced to the smallest integers; when that
    does not fit in 1..256 the weights are scaled down (the effective percent
    says what HAProxy will then do).
    """
    if n_canary == 0:
        return None, 1, 0.0
    if n_stable == 0:
        return 1, None, 100.0
    if percent <= 0:
        return 0, 1, 0.0
    if percent >= 100:
        return 1, 0, 100.0
    # Weights in hundredths of a percent, so 12.5 % is exact.
    cw = int(round(percent * 100)) * n_stable
    sw = int(round((100 - percent) * 100)) * n_canary
    g = gcd(cw, sw)
    cw, sw = cw // g, sw // g
    top = max(cw, sw)
    if top > MAX_WEIGHT:
        cw = max(1, int(round(cw * MAX_WEIGHT / top)))
        sw = max(1, int(round(sw * MAX_WEIGHT / top)))
    effective = 100.0 * cw * n_canary / (cw * n_canary + sw * n_stable)
    return cw, sw, round(effective, 2)


def _address(host, host_vars):
    """Where the gateway reaches a backend: gateway_backend_address, else ansible_host, else the host's name."""
    hv = host_vars.get(host) or {}
    for key in ("gateway_backend_address", "ansible_host"):
        value = hv.get(key)
        if value not in (None, ""):
            value = str(value)
            if not _ADDRESS.match(value):
                raise GatewayError(
                    f"{key} of backend {host} is {value!r}: give a host name or an IP address "
                    "(letters, digits, '.', ':', '-', '_').")
            return value
    return host


def _port(host, host_vars):
    """The backend's vLLM port: gateway_backend_port, else vllm_port, else the vllm role's default 8000.

    0 (the role default of gateway_backend_port) counts as not set.
    """
    hv = host_vars.get(host) or {}
    for key in ("gateway_backend_port", "vllm_port"):
        value = hv.get(key)
        if value not in (None, "", 0, "0"):
            try:
                port = int(value)
            except (TypeError, ValueError):
                port = 0
            if not 1 <= port <= 65535:
                raise GatewayError(f"{key} of backend {host} is {value!r}: give a TCP port (1-65535).")
            return port
    return 8000


def _percent(pool, value):
    try:
        percent = float(value)
    except (TypeError, ValueError):
        percent = -1.0
    if not 0 <= percent <= 100:
        raise GatewayError(f"gateway_pools: canary_percent of pool {pool} is {value!r}: give a number from 0 to 100.")
    return percent


def _maxconn(where, name, value):
    """A pool's maxconn: requests one of its servers takes at once (None: unlimited)."""
    if value in (None, "", 0):
        return None
    try:
        num = int(value)
        if isinstance(value, (bool, float)) and value != num or isinstance(value, bool):
            raise ValueError
    except (TypeError, ValueError):
        num = 0
    if not 1 <= num <= 100000:
        raise GatewayError(f"{where}.maxconn (pool {name}) is {value!r}: give the requests one server of the pool "
                           "takes at once, a whole number from 1 to 100000 (its vLLM max_num_seqs is a good start).")
    return num


def validate_pools(pools, groups):
    """Check gateway_pools against the inventory; return one dict per pool.

    Each dict has name, group, hosts, models, canary (hosts), percent, kind
    (None when not given), maxconn (None: unlimited) and standby (a pool name
    or None).  Hybrid sets and standbys are checked by :func:`serving_sets`.
    """
    if not isinstance(pools, list) or not pools:
        raise GatewayError("gateway_pools is empty: list at least one pool, e.g. "
                           "[{name: cpu, group: vllm_cpu, models: [smollm2]}].")
    out, seen_names = [], set()
    for i, pool in enumerate(pools):
        where = f"gateway_pools[{i}]"
        if not isinstance(pool, dict):
            raise GatewayError(f"{where} is {pool!r}: each pool is a mapping with name, group and models.")
        unknown = sorted(set(pool) - set(POOL_KEYS))
        if unknown:
            raise GatewayError(f"{where} has unknown keys {unknown}: the keys are {', '.join(POOL_KEYS)}.")
        name = str(pool.get("name") or "")
        if not _POOL_NAME.match(name):
            raise GatewayError(f"{where}.name is {pool.get('name')!r}: give a short name "
                               "(letters, digits, '-', '_', at most 32 characters).")
        if name in seen_names:
            raise GatewayError(f"gateway_pools: pool name {name} is used twice; give each pool its own name.")
        seen_names.add(name)
        group = pool.get("group")
        if not group or group not in groups:
            raise GatewayError(f"{where}.group (pool {name}) is {group!r}, which is not a group of the inventory: "
                               "name the inventory group whose hosts serve this pool.")
        hosts = list(groups[group] or [])
        if not hosts:
            raise GatewayError(f"{where}.group {group} (pool {name}) has no hosts: add the pool's vLLM hosts to it.")
        for host in hosts:
            if not _SERVER_NAME.match(host):
                raise GatewayError(f"inventory host {host!r} of group {group} (pool {name}) cannot name an HAProxy "
                                   "server: rename it with letters, digits, '.', ':', '-', '_' (set ansible_host "
                                   "for its address).")
        models = pool.get("models")
        if isinstance(models, str):
            models = [models]
        if not isinstance(models, list) or not models:
            raise GatewayError(f"{where}.models (pool {name}) is empty: list the model names the pool serves "
                               "(the names its vLLM instances serve, vllm_model_name or served_model_name).")
        for model in models:
            if not isinstance(model, str) or not _MODEL_NAME.match(model):
                raise GatewayError(f"{where}.models (pool {name}) has {model!r}: a model name is letters, digits "
                                   "and . _ : / @ + - (at most 128 characters).")
        canary = pool.get("canary_hosts") or []
        if isinstance(canary, str):
            canary = [canary]
        stray = [h for h in canary if h not in hosts]
        if stray:
            raise GatewayError(f"{where}.canary_hosts (pool {name}) names {stray}, not hosts of group {group} "
                               f"({', '.join(hosts)}).")
        percent = pool.get("canary_percent")
        if percent in (None, ""):
            if canary:
                raise GatewayError(f"{where} (pool {name}) has canary_hosts but no canary_percent: say which "
                                   "share of the pool's requests (0-100) the canary hosts get.")
            percent = None
        else:
            percent = _percent(name, percent)
            if not canary:
                raise GatewayError(f"{where} (pool {name}) has canary_percent {percent:g} but no canary_hosts: "
                                   "list the hosts that get that share.")
            if len(canary) == len(hosts) and percent < 100:
                raise GatewayError(f"{where} (pool {name}): every host of group {group} is a canary host, so no "
                                   f"host is left for the other {100 - percent:g} %; leave at least one out.")
        kind = pool.get("kind")
        if kind in (None, ""):
            kind = None
        elif kind not in POOL_KINDS:
            raise GatewayError(f"{where}.kind (pool {name}) is {kind!r}: give cpu or accelerator.")
        standby = pool.get("standby")
        if standby in (None, ""):
            standby = None
        else:
            standby = str(standby)
        out.append({"name": name, "group": group, "hosts": hosts, "models": list(models), "canary": list(canary),
                    "percent": percent, "kind": kind, "maxconn": _maxconn(where, name, pool.get("maxconn")),
                    "standby": standby})
    _check_standbys(out)
    return out


def _check_standbys(pools):
    """A standby is another pool with the same models, no hosts in common, and no standby of its own."""
    by_name = {p["name"]: p for p in pools}
    for pool in pools:
        name, standby = pool["name"], pool["standby"]
        if standby is None:
            continue
        where = f"gateway_pools: standby of pool {name}"
        if standby not in by_name:
            raise GatewayError(f"{where} is {standby!r}, which is not a pool of gateway_pools "
                               f"({', '.join(by_name)}): name one of them.")
        # Follow the chain first, so that a cycle is reported as one.
        chain, step = [name], standby
        while step is not None and step in by_name:
            if step in chain:
                raise GatewayError(f"gateway_pools: the standby pools form a cycle "
                                   f"({' -> '.join(chain + [step])}): a standby takes over from its pool, so it "
                                   "cannot stand by for itself; remove one of these standby keys.")
            chain.append(step)
            step = by_name[step]["standby"]
        other = by_name[standby]
        if other["standby"] is not None:
            raise GatewayError(f"{where} is {standby}, which names its own standby {other['standby']}: one level of "
                               f"standby only; name {other['standby']} as the standby of {name} instead.")
        if sorted(other["models"]) != sorted(pool["models"]):
            raise GatewayError(f"{where} is {standby}, which serves {', '.join(other['models'])} where {name} serves "
                               f"{', '.join(pool['models'])}: a standby serves the same models as its pool.")
        shared = sorted(set(other["hosts"]) & set(pool["hosts"]))
        if shared:
            raise GatewayError(f"{where} is {standby}, which shares hosts {shared} with it: a standby takes over "
                               "when every host of the pool is down, so give it hosts of its own.")


def serving_sets(pools, served=None):
    """Which pools serve each model: ``{model: {"cpu": pool, "accelerator": pool, "single": pool}}``.

    A model served by one routed pool maps to ``{"single": pool}``; a model
    served by two routed pools is a hybrid set and needs one ``cpu`` and one
    ``accelerator`` pool, each with ``maxconn``.  Standby pools are not
    routed.  ``served`` maps a host to the model names its vLLM instance
    serves (when known): the hosts of a hybrid set and of standbys must all
    serve the model, since the gateway passes the name on unchanged.
    """
    served = served or {}
    standbys = {p["standby"] for p in pools if p["standby"]}
    sets, order = {}, []
    for pool in pools:
        if pool["name"] in standbys:
            continue
        for model in pool["models"]:
            if model not in sets:
                order.append(model)
            sets.setdefault(model, []).append(pool)
    by_name = {p["name"]: p for p in pools}
    out = {}
    for model in order:
        members = sets[model]
        if len(members) == 1:
            out[model] = {"single": members[0]}
        else:
            names = " and ".join(p["name"] for p in members)
            kinds = sorted(str(p["kind"]) for p in members)
            if kinds != ["accelerator", "cpu"]:
                raise GatewayError(
                    f"gateway_pools: model {model} is served by pools {names} (kinds {', '.join(kinds)}); one model "
                    "has one pool, or one pool of kind cpu and one of kind accelerator (hybrid serving): set each "
                    "pool's kind, or serve the model from both groups' hosts in one pool.")
            for p in members:
                if p["maxconn"] is None:
                    raise GatewayError(
                        f"gateway_pools: pool {p['name']} serves {model} beside another pool but has no maxconn: "
                        "give the requests one of its servers takes at once, from which its capacity and "
                        "queue follow.")
            out[model] = {p["kind"]: p for p in members}
        group = list(members) + [by_name[p["standby"]] for p in members if p["standby"]]
        if len(group) > 1:
            for p in group:
                for host in p["hosts"]:
                    names_served = served.get(host)
                    if names_served and model not in names_served:
                        raise GatewayError(
                            f"gateway_pools: pools {', '.join(q['name'] for q in group)} all serve {model}, but host "
                            f"{host} of pool {p['name']} serves {', '.join(names_served)}: the gateway passes the "
                            f"model name on unchanged, so serve {model} there (vllm_model_name or "
                            "served_model_name) or take the host out of the pool.")
    return out


def dispatch_policy(values=None):
    """The dispatch policy with its defaults; fails naming the variable of a value out of range."""
    policy = dict(DISPATCH_DEFAULTS)
    ranges = {"size_tokens": (1, 1000000, int, "gateway_dispatch_size_tokens"),
              "load": (0.01, 1.0, float, "gateway_dispatch_load"),
              "bytes_per_token": (1, 16, int, "gateway_dispatch_bytes_per_token"),
              "retry_after": (1, 3600, int, "gateway_retry_after")}
    for key, value in (values or {}).items():
        if key not in ranges:
            raise GatewayError(f"dispatch policy has unknown key {key!r}: the keys are {', '.join(ranges)}.")
        low, high, kind, var = ranges[key]
        try:
            num = kind(value)
            if isinstance(value, bool) or (kind is int and isinstance(value, float) and value != num):
                raise ValueError
        except (TypeError, ValueError):
            num = None
        if num is None or not low <= num <= high:
            raise GatewayError(f"{var} is {value!r}: give a {'whole ' if kind is int else ''}number from {low:g} "
                               f"to {high:g}.")
        policy[key] = num
    return policy


def headroom_limits(n_servers, maxconn, load):
    """Per number of usable servers k (1..n), the requests in the pool below which it has headroom.

    The pool has headroom while its requests (HAProxy's ``be_conn``) are
    fewer than ``load`` x k x ``maxconn``; for whole numbers that is
    ``be_conn < ceil(load * k * maxconn)``.  Counting only usable servers
    (``nbsrv``) keeps a pool with a server down from taking its full share.
    """
    # Rounded to 6 places first: 0.7 * 10 is 7.000000000000001 in binary.
    return [(k, max(1, ceil(round(load * k * maxconn, 6)))) for k in range(1, n_servers + 1)]


def route_rules(sets, policy, pools_by_name):
    """The frontend's ``use_backend`` rules, in order: ``[{"backend", "model", "when": [conditions]}]``.

    A single-pool model: its backend when the model matches.  A hybrid
    model: the CPU pool when the request is short and the CPU pool has
    headroom (one rule per number of usable servers), then the accelerator
    pool for everything else (it queues what its servers cannot take).
    """
    rules = []
    for model, members in sets.items():
        is_model = f"{{ var(txn.kv_model) -m str {model} }}"
        if "single" in members:
            rules.append({"model": model, "backend": backend_name(members["single"]["name"]), "when": [is_model]})
            continue
        cpu, accel = members["cpu"], members["accelerator"]
        cpu_backend = backend_name(cpu["name"])
        short = f"{{ var(txn.kv_tokens) -m int lt {policy['size_tokens']:d} }}"
        # With every server of the pool down its standby's servers are the usable ones (nbsrv counts them).
        standby = pools_by_name.get(cpu["standby"]) if cpu["standby"] else None
        n_servers = max(len(cpu["hosts"]), len(standby["hosts"]) if standby else 0)
        for k, below in headroom_limits(n_servers, cpu["maxconn"], policy["load"]):
            rules.append({"model": model, "backend": cpu_backend,
                          "when": [is_model, short, f"{{ nbsrv({cpu_backend}) eq {k:d} }}",
                                   f"{{ be_conn({cpu_backend}) lt {below:d} }}"]})
        rules.append({"model": model, "backend": backend_name(accel["name"]), "when": [is_model]})
    return rules


def _servers(pool, host_vars, backup=False):
    """HAProxy servers of a pool: name, address, port, weight, canary, maxconn, backup, mark_down_on_error.

    The servers of a pool with a standby are marked down at their first
    failed connection (not only after gateway_health_fall failed checks), so
    that the request's retry already goes to the standby.
    """
    n_canary = len(pool["canary"])
    percent = pool["percent"] if pool["percent"] is not None else 0.0
    cw, sw, effective = canary_weights(percent, n_canary, len(pool["hosts"]) - n_canary)
    servers = []
    for host in pool["hosts"]:
        is_canary = host in pool["canary"]
        servers.append({
            "name": host,
            "address": _address(host, host_vars),
            "port": _port(host, host_vars),
            "weight": cw if is_canary else sw,
            "canary": is_canary,
            "maxconn": pool["maxconn"],
            "backup": backup,
            "mark_down_on_error": bool(pool["standby"]) and not backup,
        })
    return servers, effective


def engine_arg(engine_args, name):
    """The value of option ``name`` (dash spelling) in a backend's vllm_engine_args, in any spelling the vllm role
    reads (``host``, ``--host``, ``HOST``; ``served_model_name``, ``servedModelName``: engine_args.canonical_name)."""
    if not isinstance(engine_args, dict):
        return None
    values = [value for key, value in engine_args.items() if canonical_name(key) == name]
    return values[-1] if values else None


def served_names(host_vars):
    """The model names a backend's vLLM serves, from its inventory variables (empty when unknown).

    ``served_model_name`` (or ``served-model-name``) of its vllm_engine_args,
    a name or a list, else its vllm_model_name (the name the vllm role
    serves the model under).
    """
    host_vars = host_vars or {}
    engine_args = host_vars.get("vllm_engine_args") or {}
    value = engine_arg(engine_args, "served-model-name")
    if value in (None, "", []):
        value = host_vars.get("vllm_model_name")
    if value in (None, "", []):
        return []
    return [value] if isinstance(value, str) else [str(v) for v in value]


def gateway_plan(pools, groups, host_vars=None, default_pool="", dispatch=None):
    """The gateway's backends, servers, weights and model routes.

    ``pools``: gateway_pools; ``groups``: the inventory's groups (group ->
    hosts); ``host_vars``: per backend host its raw inventory variables
    (gateway_backend_address, ansible_host, gateway_backend_port,
    vllm_port, and vllm_engine_args / vllm_model_name for :func:`served_names`;
    missing or None when not set); ``default_pool``: gateway_default_pool; ``dispatch``: the
    dispatch policy (keys of :data:`DISPATCH_DEFAULTS`).

    Returns a dict: ``hosts`` (every backend host, sorted), ``backends``
    (one per routed pool: name, pool, kind, models, servers with
    name/address/port/weight/canary/maxconn/backup, canary_percent as
    HAProxy will split it, standby), ``models`` (every routed model once),
    ``routes`` (the ``use_backend`` rules in order: model, backend, when),
    ``hybrid`` (whether a model is served by a cpu and an accelerator pool),
    ``dispatch`` (the policy), ``default_backend`` (where a request without
    a known model goes, or None for a 404) and ``no_model_backend`` (where
    a request without a model goes).
    """
    validated = validate_pools(pools, groups)
    policy = dispatch_policy(dispatch)
    host_vars = host_vars or {}
    standbys = {p["standby"] for p in validated if p["standby"]}
    by_name = {p["name"]: p for p in validated}
    routed = [p for p in validated if p["name"] not in standbys]
    names = [p["name"] for p in routed]
    if default_pool and default_pool not in names:
        raise GatewayError(f"gateway_default_pool is {default_pool!r}, which is not a routed pool of gateway_pools "
                           f"({', '.join(names)}): name one of them (not a standby), or leave it empty to refuse "
                           "unknown models.")
    served = {host: names for host, names in ((h, served_names(hv)) for h, hv in host_vars.items()) if names}
    sets = serving_sets(validated, served)
    backends, all_hosts = [], set()
    for pool in routed:
        servers, effective = _servers(pool, host_vars)
        standby = by_name.get(pool["standby"]) if pool["standby"] else None
        if standby:
            servers += _servers(standby, host_vars, backup=True)[0]
        all_hosts.update(s["name"] for s in servers)
        backends.append({
            "name": backend_name(pool["name"]),
            "pool": pool["name"],
            "kind": pool["kind"],
            "models": pool["models"],
            "servers": servers,
            "canary_percent": effective if pool["canary"] else None,
            "standby": pool["standby"],
        })
    return {
        "hosts": sorted(all_hosts),
        "backends": backends,
        "models": list(sets),
        "routes": route_rules(sets, policy, by_name),
        "hybrid": any("single" not in members for members in sets.values()),
        "dispatch": policy,
        "default_backend": backend_name(default_pool) if default_pool else None,
        "no_model_backend": backend_name(default_pool or names[0]),
    }


# The vllm role's default vllm_host (roles/vllm/defaults/main.yml): a backend whose inventory sets none binds there.
VLLM_HOST_DEFAULT = "0.0.0.0"
_TRUE = ("true", "yes", "on", "1", "y", "t")


def _flag(value):
    """An inventory boolean (true, 'yes', 1, ...) as Ansible reads it; anything else is false."""
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() in _TRUE if value is not None else False


def backend_bind(host_vars):
    """The address a backend's vLLM binds and the variable that set it.

    ``host`` of its vllm_engine_args wins (as in the vllm role's engine config), then its vllm_host, then the
    vllm role's default.  Returns ``(address, variable)``.
    """
    host_vars = host_vars or {}
    host = engine_arg(host_vars.get("vllm_engine_args") or {}, "host")
    if host not in (None, ""):
        return str(host), "vllm_engine_args.host"
    host = host_vars.get("vllm_host")
    if host not in (None, ""):
        return str(host), "vllm_host"
    return VLLM_HOST_DEFAULT, "vllm_host (the vllm role's default)"


def backend_key_decision(host_vars):
    """The vllm role's API-key decision for a backend, from its inventory (:func:`endpoint_security.api_key_decision`).

    ``host_vars``: ``vllm_api_key_set`` (whether vllm_api_key is non-empty; the key itself never comes here),
    ``vllm_host``, ``vllm_engine_args`` (its ``host``) and ``vllm_allow_unauthenticated``.  A backend off
    loopback without a key of its own gets one generated on its node, so it has one.  Returns the decision's
    ``source``, ``keyed`` (the backend checks a key on every route) and ``reason`` (the variables behind it).
    """
    host_vars = host_vars or {}
    bind, variable = backend_bind(host_vars)
    given = host_vars.get("vllm_api_key_set") is True  # the role passes a bool; anything else is no key
    opted_out = _flag(host_vars.get("vllm_allow_unauthenticated"))
    source = endpoint_security.api_key_decision(given, bind, opted_out, "", None)["source"]
    if source == endpoint_security.LOOPBACK:
        reason = f"vllm_api_key is empty and {variable} is {bind}, loopback, where the vllm role sets no key"
    elif source == endpoint_security.OPEN:
        reason = f"vllm_api_key is empty and vllm_allow_unauthenticated is true on {bind}"
    elif source == endpoint_security.GIVEN:
        reason = "its vllm_api_key"
    else:
        reason = f"a key generated on its node ({variable} {bind} is off loopback)"
    return {"source": source, "keyed": source in endpoint_security.KEYED, "reason": reason}


def keyless_backend_problem(hosts, host_vars, settings):
    """Why a gateway that checks no key would publish a backend that checks none either (None when it does not).

    With an empty gateway_api_keys the gateway passes requests on unchecked, so every backend must have a
    key of its own (:func:`backend_key_decision`).  A gateway bound on loopback only (gateway_bind_address
    127.0.0.1, ::1, localhost) is accepted: it is reachable from its own host only, the reach the vllm
    role itself grants a keyless loopback instance.
    """
    if settings.get("gateway_api_keys"):
        return None
    bind = str(settings.get("gateway_bind_address") or "0.0.0.0")
    if endpoint_security.is_loopback(bind):
        return None
    host_vars = host_vars or {}
    keyless = []
    for host in hosts:
        decision = backend_key_decision(host_vars.get(host))
        if not decision["keyed"]:
            keyless.append(f"{host} ({decision['reason']})")
    if not keyless:
        return None
    which = f"backend {keyless[0]} checks" if len(keyless) == 1 else f"backends {'; '.join(keyless)} check"
    return (f"gateway_api_keys is empty, so the gateway on {bind} checks no API key and passes every request on, "
            f"and {which} none either: anyone who reaches the gateway could use it. Set gateway_api_keys (the "
            "keys the gateway checks), or give the backend a key of its own (set vllm_api_key, or bind it off "
            "loopback with vllm_host, which gets it a generated key, and drop vllm_allow_unauthenticated), or "
            "bind the gateway on loopback only (gateway_bind_address: 127.0.0.1). Nothing was changed.")


def validate_settings(settings):
    """Check the gateway's scalar settings; return the list of problems (empty when all are good).

    ``settings`` maps variable name -> value for: gateway_port,
    gateway_tls_port (ports), gateway_timeout_* (seconds, > 0),
    gateway_health_interval (seconds, > 0), gateway_health_rise / _fall,
    gateway_retries, gateway_maxconn (counts), gateway_max_body_kib (the
    request body HAProxy buffers to read ``model``: 16..1024), gateway_api_keys
    (list of keys; a key is 16+ printable characters without spaces),
    gateway_tls_certificate / gateway_tls_key (both or neither).
    """
    problems = []

    def number(name, low, high, integer=True):
        if name not in settings:
            return
        value = settings[name]
        try:
            num = int(value) if integer else float(value)
            if integer and isinstance(value, float) and value != int(value):
                raise ValueError
        except (TypeError, ValueError):
            num = None
        if isinstance(value, bool) or num is None or not low <= num <= high:
            problems.append(f"{name} is {value!r}: give a {'whole ' if integer else ''}number from {low} to {high}.")

    for name in ("gateway_port", "gateway_tls_port"):
        number(name, 1, 65535)
    for name in ("gateway_timeout_connect", "gateway_timeout_client", "gateway_timeout_server",
                 "gateway_timeout_queue", "gateway_health_interval"):
        number(name, 1, 86400)
    for name in ("gateway_health_rise", "gateway_health_fall"):
        number(name, 1, 100)
    number("gateway_retries", 0, 10)
    number("gateway_maxconn", 1, 1000000)
    number("gateway_max_body_kib", 16, 1024)
    number("gateway_metrics_port", 0, 65535)
    metrics = str(settings.get("gateway_metrics_port") or 0)
    for name in ("gateway_port", "gateway_tls_port"):
        if metrics != "0" and name in settings and str(settings[name]) == metrics:
            problems.append(f"gateway_metrics_port equals {name}: give the metrics exporter its own port (0: none).")
    keys = settings.get("gateway_api_keys")
    if keys is not None:
        if not isinstance(keys, list):
            problems.append("gateway_api_keys must be a list of keys (empty: the gateway passes the "
                            "Authorization header to the backends unchecked).")
        else:
            for i, key in enumerate(keys):
                if not isinstance(key, str) or len(key) < API_KEY_MIN_LENGTH or not re.match(r"^[\x21-\x7e]+$", key):
                    problems.append(f"gateway_api_keys[{i}] is not a usable key: a key is at least {API_KEY_MIN_LENGTH} printable "
                                    "ASCII characters without spaces (the value is not shown).")
    cert, key = settings.get("gateway_tls_certificate"), settings.get("gateway_tls_key")
    if bool(cert) != bool(key):
        problems.append("gateway_tls_certificate and gateway_tls_key go together: set both (PEM files on the "
                        "controller) to terminate TLS, or neither.")
    if "gateway_tls_port" in settings and "gateway_port" in settings and cert and \
            str(settings["gateway_tls_port"]) == str(settings["gateway_port"]):
        problems.append("gateway_tls_port equals gateway_port: give TLS its own port.")
    return problems


def listener_settings(settings):
    """What the gateway's frontend needs besides the pools (call after :func:`validate_settings`).

    ``bufsize``: HAProxy's tune.bufsize in bytes, the largest request body
    read for its model (gateway_max_body_kib, default 64 KiB) plus 16 KiB for
    the headers; ``tls``: whether TLS is terminated (a certificate and a key
    are given); ``api_keys``: whether the gateway checks keys itself (a
    non-empty gateway_api_keys) or passes the Authorization header on;
    ``metrics_port``: the port of HAProxy's Prometheus exporter, None when
    gateway_metrics_port is 0.
    """
    body_kib = int(settings.get("gateway_max_body_kib") or 64)
    return {
        "metrics_port": int(settings.get("gateway_metrics_port") or 0) or None,
        "bufsize": (body_kib + 16) * 1024,
        "tls": bool(settings.get("gateway_tls_certificate")) and bool(settings.get("gateway_tls_key")),
        "api_keys": bool(settings.get("gateway_api_keys")),
    }


def haproxy_problem(version_output):
    """Why the HAProxy that ``haproxy -v`` printed cannot run the gateway (None when it is 2.5 or later)."""
    match = _HAPROXY_VERSION.search(version_output or "")
    if not match:
        first = (version_output or "").strip().splitlines()[:1]
        return (f"cannot read the HAProxy version from 'haproxy -v' ({first[0] if first else 'no output'!r}); "
                f"the gateway needs HAProxy {'.'.join(map(str, MIN_HAPROXY))} or later.")
    found = (int(match.group(1)), int(match.group(2)))
    if found >= MIN_HAPROXY:
        return None
    version = f"{match.group(1)}.{match.group(2)}{match.group(3)}"
    return (f"HAProxy {version} is installed, and the gateway's configuration (json_query, http_auth_bearer, "
            f"http-request return) needs HAProxy {'.'.join(map(str, MIN_HAPROXY))} or later. Ubuntu 22.04 and EL 9 ship "
            "2.4: install HAProxy 2.6 or later from a repository that has it (on Ubuntu 22.04 the haproxy-2.8 PPA of "
            "haproxy.debian.net, ppa:vbernat/haproxy-2.8) before running the role, or put the gateway on Debian 12 "
            "or Ubuntu 24.04. Nothing was configured.")
