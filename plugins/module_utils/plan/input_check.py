# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""Is every value a role was given one it can act on, before anything changes?

Ansible's role argument validation (``meta/argument_specs.yml``) already
rejects a wrong type or a value outside ``choices`` at role entry.  What it
cannot see is checked here, one rule per user-facing variable:

- out of range: a port above 65535, a timeout of 0, a KV cache of -1 GiB;
- an engine option that the requested vLLM release does not have
  (``engine_args.normalize_engine_args`` against ``engine_options``);
- a path that does not exist where it is read (``missing_paths``, run on the
  node for node paths and on the controller for controller paths);
- a name or value with shell, newline or control characters.  Values reach a
  systemd unit (``ExecStart=``, ``User=``, ``ReadWritePaths=``), the 0600
  environment file that both systemd (``EnvironmentFile=``) and the
  ``vllm_service_manager: none`` launcher (POSIX ``sh``, ``. file``) read, a
  YAML engine config or a command line.  ``vllm_api_key: "abc\\nX=1"`` would
  otherwise write a second variable into that environment file;
- a size that does not fit the host (a CPU KV cache larger than its memory).

Every message starts with the variable's name and says the fix.  Secret
values (API key, tokens) are never repeated in a message.
"""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

import ipaddress
import os
import re

from ansible_collections.kunpeng.vllm.plugins.module_utils.backends import registry as backends
from ansible_collections.kunpeng.vllm.plugins.module_utils.execute import engine_artifact, safe_extract
from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import cluster, container, engine_args, env_file, gateway, index_auth

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# Instance, model and file names: they name units, paths and directories.
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
# POSIX account names (useradd's portable set plus upper case, which Huawei's
# HwHiAiUser uses).
_ACCOUNT = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,31}$")
# Paths written into unit files and command lines: no white space (it splits
# ExecStart= and ReadWritePaths=), no '%' (a systemd specifier), no '$'
# (ExecStart= expands it), no quotes, backslashes or control characters.
_PATH = re.compile(r"^/[A-Za-z0-9._/+@:,=-]*$")
_URL = re.compile(r"^(https?|file)://[^\s\"'`$\\<>|;&(){}]+$")
# pip requirement or source: a name with extras and version specifiers, a VCS
# URL or a path; no white space or shell characters (pip's extra_args are
# split on white space).
_REQUIREMENT = re.compile(r"^[A-Za-z0-9/.][A-Za-z0-9._+\-\[\],<>=!~*@:/#%]*$")
_ENV_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SHA256 = re.compile(r"^[0-9a-fA-F]{64}$")
_HOST = re.compile(r"^[A-Za-z0-9.:_-]+$")
_VERSION = re.compile(r"^[0-9][0-9A-Za-z.+_-]*$")
# What systemd's EnvironmentFile= and POSIX sh read alike without quotes; no
# '~': sh expands VLLM_API_KEY=~root to /root, systemd does not.
_API_KEY = re.compile(r"^[A-Za-z0-9._+/=-]+$")
_DEVICES = re.compile(r"^[A-Za-z0-9,:_-]*$")

# Free-form environment-file values (vllm_environment, the CPU binding) are
# written single-quoted (KEY='value'), which systemd's EnvironmentFile= and
# POSIX sh read the same way as long as the value holds no single quote and
# no line break.
ENV_FIX = "remove line breaks, control characters and single quotes"


def _describe(value):
    return f"{type(value).__name__} {value!r}"


def _shown(name, value, secret):
    return "the value" if secret else repr(value)


def _env_text_problem(name, value, secret=False):
    if not isinstance(value, str):
        value = str(value)
    if _CONTROL.search(value):
        return (f"{name}: {_shown(name, value, secret)} holds a line break or control character, which would write "
                f"extra lines into the service environment file; {ENV_FIX}")
    if "'" in value:
        return (f"{name}: {_shown(name, value, secret)} holds a single quote, which ends the quoted value in the "
                f"service environment file; {ENV_FIX}")
    return None


# --- rule kinds: each returns a problem (str) or None ------------------------


def _int_range(lo, hi=None):
    def rule(name, value, ctx):
        if isinstance(value, bool) or not isinstance(value, int):
            try:
                value = int(str(value))
            except ValueError:
                return f"{name}: {_describe(value)} is not a whole number; set an integer"
        if value < lo or (hi is not None and value > hi):
            bound = f"from {lo} to {hi}" if hi is not None else f"of at least {lo}"
            return f"{name}: {value} is out of range; set a whole number {bound}"
        return None
    rule.kind = "out_of_range"
    rule.bounds = (lo, hi)
    return rule


def _float_range(lo, hi=None):
    def rule(name, value, ctx):
        try:
            number = float(value)
        except (TypeError, ValueError):
            return f"{name}: {_describe(value)} is not a number; set a number"
        if number < lo or (hi is not None and number > hi):
            bound = f"from {lo} to {hi}" if hi is not None else f"of at least {lo}"
            return f"{name}: {value} is out of range; set a number {bound}"
        return None
    rule.kind = "out_of_range"
    rule.bounds = (lo, hi)
    return rule


def _regex(pattern, what, empty=False, secret=False):
    def rule(name, value, ctx):
        if value is None or (empty and value == ""):
            return None
        text = str(value)
        if _CONTROL.search(text):
            return (f"{name}: {_shown(name, text, secret)} holds a line break or control character; "
                    f"set {what}")
        if not pattern.match(text):
            return f"{name}: {_shown(name, text, secret)} is not {what}; set {what}"
        return None
    rule.kind = "characters"
    return rule


def _text(empty=True, secret=False):
    """Free text that reaches a file or a request: no line breaks or control characters."""
    def rule(name, value, ctx):
        text = "" if value is None else str(value)
        if not empty and text == "":
            return f"{name} is empty; set a value"
        if _CONTROL.search(text):
            return (f"{name}: {_shown(name, text, secret)} holds a line break or control character; "
                    "remove them")
        return None
    rule.kind = "characters"
    return rule


def _env_value(pattern=None, what=None, secret=False):
    """A value written into the service environment file."""
    def rule(name, value, ctx):
        if value is None or value == "":
            return None
        problem = _env_text_problem(name, value, secret)
        if problem:
            return problem
        if pattern is not None and not pattern.match(str(value)):
            return f"{name}: {_shown(name, value, secret)} is not {what}; set {what}"
        return None
    rule.kind = "characters"
    return rule


def _api_key(rule):
    """``rule``, then at least gateway.API_KEY_MIN_LENGTH characters (empty stays empty: the role then generates a
    key, or the variable is off).  The value is never shown."""
    def checked(name, value, ctx):
        problem = rule(name, value, ctx)
        if problem or value is None or value == "":
            return problem
        if len(str(value)) < gateway.API_KEY_MIN_LENGTH:
            return (f"{name}: the value is shorter than {gateway.API_KEY_MIN_LENGTH} characters, short enough to "
                    f"guess; set a key of at least {gateway.API_KEY_MIN_LENGTH} characters (openssl rand -hex 24)")
        return None
    checked.kind = rule.kind
    return checked


def _url_secret(value):
    """Whether the URL ``value`` carries a secret: a password, or over http(s) a user part alone (a token); an ssh
    URL's user (git+ssh://git@host/...) is a name, its key is elsewhere."""
    try:
        found = index_auth.credentials(value)
    except ValueError:  # not a URL urlsplit reads: the requirement rule says so
        return False
    transport = str(value).split("://", 1)[0].rsplit("+", 1)[-1].lower()
    if bool(found["password"]) or (bool(found["username"]) and transport in ("http", "https")):
        return True
    # a URL inside a longer text (an apt source line), an ssh user aside
    return index_auth.mentions_credentials(value) and not str(value).lstrip().startswith(("git+ssh://", "ssh://"))


_PIP_CREDENTIALS = ("pip's command line, the plan and its fact", "the credentials through a netrc: the role writes one for pip "
                    "from those of vllm_pip_index_url and vllm_pip_extra_index_urls (same host), git reads root's "
                    "~/.netrc or its credential helper")


def _no_credentials(rule, reaches=_PIP_CREDENTIALS[0], instead=_PIP_CREDENTIALS[1]):
    """``rule``, then no ``user:password@`` or ``token@`` in a URL: pip's requirement and source URLs reach its command
    line, the plan and its fact (the index credentials go to a netrc, plan/index_auth.py); ``reaches`` and
    ``instead`` say where else such a URL goes and what to do for another variable."""
    def checked(name, value, ctx):
        if _url_secret(value):
            return (f"{name}: the URL holds credentials (user:password@ or token@), which would reach {reaches}; give "
                    f"the URL without them, and {instead}")
        return rule(name, value, ctx)
    checked.kind = rule.kind
    return checked


def _list_of(item_rule):
    def rule(name, value, ctx):
        if value is None:
            return None
        if not isinstance(value, list):
            return f"{name}: {_describe(value)} is not a list; set a list"
        for index, item in enumerate(value):
            problem = item_rule(f"{name}[{index}]", item, ctx)
            if problem:
                return problem
        return None
    rule.kind = item_rule.kind
    return rule


def _path_or_url(name, value, ctx):
    text = str(value)
    if text.startswith("/"):
        return _path(name, text, ctx)
    return _regex(_URL, "an absolute path or an http(s):// URL without white space or shell characters")(name, text, ctx)


_path_or_url.kind = "characters"


def _normal(rule):
    """``rule``, then no ``.`` or ``..`` component: the string checks (and systemd's ReadWritePaths=) see
    ``/var/lib/vllm/models/../../../srv`` under /var/lib/vllm while it names /srv."""
    def checked(name, value, ctx):
        problem = rule(name, value, ctx)
        if problem or value is None or value == "":
            return problem
        text = str(value)
        parts = text.split("/")
        if "." in parts or ".." in parts:
            return (f"{name}: {text!r} holds a '.' or '..' component, which names another directory than it "
                    f"appears to; set the normalised path {os.path.normpath(text)!r}")
        return None
    checked.kind = rule.kind
    return checked


# A path only the controller reads (a fetch destination, a wheelhouse):
# absolute, no line breaks or control characters; white space is harmless,
# and so is '..' ("{{ playbook_dir }}/../certs": the controller's user
# chooses every path there anyway).
_controller_path = _regex(re.compile(r"^/.*$"), "an absolute path on the controller")
_opt_controller_path = _regex(re.compile(r"^/.*$"), "an absolute path on the controller", empty=True)
_path = _normal(_regex(_PATH, "an absolute path without white space, quotes, '%', '$' or control characters"))
_opt_path = _normal(_regex(_PATH, "an absolute path without white space, quotes, '%', '$' or control characters",
                           empty=True))
_url = _regex(_URL, "an http(s):// URL without white space or shell characters", empty=True)
_name = _regex(_NAME, "a name of letters, digits, '.', '_' and '-' that starts with a letter or digit")
_opt_name = _regex(_NAME, "a name of letters, digits, '.', '_' and '-' that starts with a letter or digit", empty=True)
_account = _regex(_ACCOUNT, "an account name of letters, digits, '_', '.' and '-' (32 characters at most)")


def _service_account(name, value, ctx):
    """An account name that is not root's: the engine runs model code and reads the network."""
    problem = _account(name, value, ctx)
    if problem is None and str(value) == "root":
        return (f"{name}: 'root' would run the engine, and every model's code, with every privilege; set an "
                "unprivileged account such as vllm (the role creates it)")
    return problem


_service_account.kind = "characters"
_http_url = _regex(re.compile(r"^https?://[^\s\"'`$\\<>|;&(){}]+$"),
                   "an https:// URL without white space or shell characters", empty=True)


def _artifact_url(name, value, ctx):
    """An engine artifact is unpacked as root and run: https unless vllm_engine_artifact_allow_http says otherwise."""
    problem = _http_url(name, value, ctx)
    if problem or not value or str(value).startswith("https://"):
        return problem
    return engine_artifact.url_problem(value, ctx.get("values", {}).get("vllm_engine_artifact_allow_http") is True)


_artifact_url.kind = "characters"
_requirement = _regex(_REQUIREMENT, "a pip requirement (name[extras]==version, a VCS URL or a path) without white space or "
                      "shell characters")
_opt_requirement = _regex(_REQUIREMENT, "a pip requirement (name[extras]==version, a VCS URL or a path) without white "
                          "space or shell characters", empty=True)
_version = _regex(_VERSION, "a version such as 0.11.0", empty=True)
_sha256 = _regex(_SHA256, "64 hexadecimal digits (sha256sum of the file)", empty=True)
_host = _regex(_HOST, "an IP address or a host name", empty=False)
_opt_host = _regex(_HOST, "an IP address or a host name", empty=True)
_port = _int_range(1, 65535)
# Prometheus and systemd durations: 15s, 5m, 1h30m, 15d.
_duration = _regex(re.compile(r"^([0-9]+(ms|s|m|h|d|w|y))+$"), "a duration such as 15s, 5m, 1h30m or 15d")


def _opt_port(name, value, ctx):
    if value is None or value == "":
        return None
    return _port(name, value, ctx)


_opt_port.kind = "out_of_range"
_opt_port.bounds = _port.bounds


def _model_src(name, value, ctx):
    """Node path, controller folder, archive URL or repository id: all reach a command line or a path."""
    text = "" if value is None else str(value)
    if text == "":
        return None
    if text.startswith("/"):
        return _path(name, text, ctx)
    if "://" in text:
        problem = _url(name, text, ctx)
        if problem is None and ctx["values"].get("vllm_model_source") == "url":
            # The archive is unpacked by the filtering extractor, which reads tar archives only.
            try:
                safe_extract.needs_zstd(text)
            except ValueError as error:
                problem = f"{name}: {error}; publish the model as a tar archive"
        if problem is None:
            try:
                found = index_auth.credentials(text)
            except ValueError:
                found = {"username": "", "password": ""}
            if found["username"] and not found["password"]:
                # get_url logs url_username on the node (only url_password is no_log): a token in the user part
                # would reach its journal (review round 2).
                problem = (f"{name}: the URL holds a token as its user (token@host), which get_url would log on the node; "
                           "write it as user:token@host (for example oauth2:<token>@ for GitLab, <user>:<token>@ for "
                           "Artifactory or Nexus): the password part goes where nothing logs it")
        # The URL's credentials (get_url takes them apart, url_password) are never shown.
        return problem and problem.replace(text, index_auth.without_credentials(text))
    return _regex(re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$"),
                  "an absolute path, an http(s):// URL or a repository id such as org/model")(name, text, ctx)


_model_src.kind = "characters"


#: Engine options that carry a secret, with the variable that carries it instead (vllm_api_key is vllm_endpoint's:
#: final_bind refuses api-key there, naming the key's own decision).
SECRET_ENGINE_OPTIONS = {"hf-token": "vllm_hf_token (no_log, handed to the download in a file only root reads)"}


def _engine_args(name, value, ctx):
    if value is None:
        return None
    if not isinstance(value, dict):
        return f"{name}: {_describe(value)} is not a mapping; set option: value pairs"
    for key, item in value.items():
        for text in [key] + (item if isinstance(item, list) else [item]):
            if isinstance(text, str) and _CONTROL.search(text):
                return (f"{name}: option {key!r} holds a line break or control character; remove them "
                        "(the engine config and the command line must not be split)")
        if engine_args.canonical_name(key) in SECRET_ENGINE_OPTIONS:
            # the engine config is in the plan's result and fact, the config file's --diff, a ConfigMap (review round 6)
            return (f"{name}: option {key!r} is a secret, and the engine config is shown and stored (the plan, the "
                    f"config file's diff, a Kubernetes ConfigMap); remove it and set {SECRET_ENGINE_OPTIONS[engine_args.canonical_name(key)]}")
    _normalized, problems = engine_args.normalize_engine_args(value, ctx.get("vllm_version") or None)
    if problems:
        return f"{name}: " + "; ".join(problems)
    return None


_engine_args.kind = "engine_option"


def _environment(name, value, ctx):
    if value is None:
        return None
    if not isinstance(value, dict):
        return f"{name}: {_describe(value)} is not a mapping; set NAME: value pairs"
    for key, item in value.items():
        if not _ENV_KEY.match(str(key)):
            return (f"{name}: key {str(key)!r} is not an environment variable name; use letters, digits and '_', "
                    "not starting with a digit")
        problem = _env_text_problem(f"{name}.{key}", "" if item is None else item)
        if problem:
            return problem
        problem = _env_privilege_problem(f"{name}.{key}", str(key), "" if item is None else str(item))
        if problem:
            return problem
    return None


_environment.kind = "characters"

# Environment entries that give whoever sets them more than a setting.
# VLLM_SERVER_DEV_MODE: vLLM's api_server then mounts its development routes
# (vllm/entrypoints/serve/dev, e.g. POST /reset_prefix_cache, /sleep,
# /collective_rpc) which run engine-side calls without vLLM's API key.
# LD_AUDIT: the dynamic loader runs the named library in the engine.
REFUSED_ENVIRONMENT = {
    "VLLM_SERVER_DEV_MODE": "it serves vLLM's development routes (/collective_rpc, /sleep, /reset_prefix_cache) "
                            "without the API key; remove it",
    "LD_AUDIT": "the loader runs the named library inside the engine; remove it",
    # vLLM's envs.py: "allows pickle-based serialization" of messages between its processes, code execution for
    # whoever reaches those sockets.
    "VLLM_ALLOW_INSECURE_SERIALIZATION": "it lets vLLM unpickle the messages of its processes (code execution for "
                                         "whoever reaches their sockets); remove it",
    # vLLM's envs.py: "Whether to log responses from API Server for debugging": every completion in the journal.
    "VLLM_DEBUG_LOG_API_SERVER_RESPONSE": "it writes every API response (the users' completions) to the journal; remove it",
    # The role sets both in the engine's environment file (vllm.env.j2): the route guard's import path and the
    # addresses that read /metrics without the key (vllm_metrics_sources); a second value would replace them.
    "PYTHONPATH": "the role sets it (the route guard's module); another value would load other code or drop the "
                  "guard; remove it",
    "KUNPENG_VLLM_METRICS_SOURCES": "the role sets it from vllm_metrics_sources; set that variable instead",
    # The role sets it where the engine drives Ray (the variables kept from its Ray workers, the API key among them).
    "VLLM_CONFIG_ROOT": "the role sets it (the list of variables kept from vLLM's Ray workers, the API key among "
                        "them); remove it",
}
# vLLM's envs.py: the data parallel layout through the environment (VLLM_DP_*), and the address NIXL's side channel
# binds: members of an instance over several hosts whose ports have no authentication, without the firewall check a
# cluster group gets (review round 4).
REFUSED_ENVIRONMENT.update({name: "it makes the engine one member of an instance over several hosts, whose ports "
                                  "have no authentication; serve over several hosts with vllm_cluster_group instead"
                            for name in ("VLLM_DP_MASTER_IP", "VLLM_DP_MASTER_PORT", "VLLM_DP_SIZE", "VLLM_DP_RANK",
                                         "VLLM_DP_RANK_LOCAL", "VLLM_NIXL_SIDE_CHANNEL_HOST",
                                         "VLLM_MOONCAKE_BOOTSTRAP_PORT", "MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE",
                                         "RANK", "LOCAL_RANK")})
# uvicorn takes the client address from X-Forwarded-For when the peer is in
# FORWARDED_ALLOW_IPS (uvicorn's settings, --forwarded-allow-ips; its
# proxy_headers._TrustedHosts): "*" trusts every peer, an entry with '/' is a
# network (0.0.0.0/1,128.0.0.0/1, 0.0.0.0/00 or 0.0.0.0/0.0.0.0 cover every
# address), any other entry an address or, when it is none, a literal compared
# with the peer's text (a name is not resolved).  A client that a trusted peer
# is may claim a metrics source's address, so only single proxy addresses pass.


def forwarded_allow_ips_problem(value):
    """Why a FORWARDED_ALLOW_IPS value trusts more than named proxies, or None: each comma-separated entry must be
    one address (a /32 or /128 network is one too); '*', any wider network and a name are refused."""
    for entry in (item.strip() for item in str(value).split(",")):
        if not entry:
            continue
        if entry == "*":
            return "'*' trusts every peer"
        try:
            network = ipaddress.ip_network(entry, strict=False)
        except ValueError:
            return f"{entry!r} is not an address (uvicorn does not resolve names)"
        if network.num_addresses != 1:
            return f"{entry!r} is a network of {network.num_addresses} addresses, each of them trusted"
    return None


# LD_PRELOAD only names system libraries (jemalloc or tcmalloc, which the
# vLLM CPU and vllm-ascend guides preload): directories only root writes.
PRELOAD_DIRS = ("/usr/lib/", "/usr/lib64/", "/lib/", "/lib64/")


def _env_privilege_problem(name, key, value):
    if key in REFUSED_ENVIRONMENT:
        return f"{name}: {REFUSED_ENVIRONMENT[key]}"
    forwarded = forwarded_allow_ips_problem(value) if key == "FORWARDED_ALLOW_IPS" else None
    if forwarded:
        return (f"{name}: {forwarded}; uvicorn takes the client address from X-Forwarded-For for every trusted peer, "
                "so any client behind one could pass as a metrics source; name each reverse proxy by its address "
                "(10.0.0.5,10.0.0.6)")
    # The route guard's switch for keyless /metrics from loopback (off behind a proxy on the node); it stops the
    # engine at start on any other value, so that is refused here, before any change.
    if key == "KUNPENG_VLLM_METRICS_LOOPBACK" and value.strip().lower() not in ("on", "off"):
        return f"{name}: KUNPENG_VLLM_METRICS_LOOPBACK is {value!r}; set on (the default) or off"
    if key == "LD_PRELOAD":
        for entry in re.split(r"[\s:]+", value.strip()):
            parts = entry.split("/")
            if entry and (not entry.startswith(PRELOAD_DIRS) or "." in parts or ".." in parts):
                return (f"{name}: {entry!r} is not a library under {', '.join(PRELOAD_DIRS)}; preload only a "
                        "system library (for example /usr/lib/x86_64-linux-gnu/libjemalloc.so.2) or remove it")
    return None


def environment_file_problems(files):
    """A message for each variable of ``files`` (path -> text of a vllm_environment_files file) that vllm_environment
    would refuse: the unit and the launcher load those files after the role's own, so they hold the same rules."""
    problems = []
    for path, text in files.items():
        if env_file.control_characters(text):
            problems.append(f"vllm_environment_files: {path} holds a control character (other than tab and line "
                            "ends), which systemd, the launcher and this check could read differently; remove it")
            continue
        joined = env_file.ambiguous_lines(text)
        if joined:
            problems.append(f"vllm_environment_files: {path} line {', '.join(str(n) for n in joined)} ends in a "
                            "backslash or leaves a quote open, which systemd reads together with the next line and the "
                            "launcher does not; write each variable on one line")
            continue
        for key, value in env_file.assignments(text):
            if key == "VLLM_API_KEY":
                # vllm_endpoint refuses it in vllm_environment (final_bind); a file loaded after the role's would
                # replace the key the role decided (review round 4)
                problems.append(f"vllm_environment_files: {path} sets VLLM_API_KEY, which would replace the instance's "
                                "API key; remove it and set vllm_api_key")
                continue
            problem = _env_privilege_problem(f"vllm_environment_files: {path} sets {key}", key, value)
            if problem:
                problems.append(problem)
    return problems


# Ports of a multi-node instance: the names the planner knows.
CLUSTER_PORT_NAMES = tuple(cluster.DEFAULT_PORTS)


def _cluster_ports(name, value, ctx):
    if value is None:
        return None
    if not isinstance(value, dict):
        return f"{name}: {_describe(value)} is not a mapping; set port names ({', '.join(CLUSTER_PORT_NAMES)}) to ports"
    for key, port in value.items():
        if key not in CLUSTER_PORT_NAMES:
            return f"{name}: {str(key)!r} is not a cluster port; use {', '.join(CLUSTER_PORT_NAMES)}"
        problem = _port(f"{name}.{key}", port, ctx)
        if problem:
            return problem
    return None


_cluster_ports.kind = "out_of_range"


_KV_CACHE_MIN = _int_range(0)


def _kv_cache(name, value, ctx):
    # 0: derived from the probe (kunpeng.vllm.cpu_runtime).
    problem = _KV_CACHE_MIN(name, value, ctx)
    if problem:
        return problem
    memory_mb = ctx.get("memory_mb") or 0
    if memory_mb and int(value) * 1024 >= memory_mb:
        return (f"{name}: a {int(value)} GiB KV cache does not fit this host's {memory_mb / 1024:.1f} GiB of memory "
                "with the model beside it; set a smaller value")
    return None


_kv_cache.kind = "size"
# The upper bound is the host's memory, known only on the host.
_kv_cache.bounds = _KV_CACHE_MIN.bounds


def _dict_of_text(name, value, ctx):
    if value is None:
        return None
    if not isinstance(value, dict):
        return f"{name}: {_describe(value)} is not a mapping"
    for key, item in value.items():
        for text in (key, item):
            if isinstance(text, str) and _CONTROL.search(text):
                return f"{name}: entry {key!r} holds a line break or control character; remove them"
            if isinstance(text, dict):
                problem = _dict_of_text(f"{name}.{key}", text, ctx)
                if problem:
                    return problem
    return None


_dict_of_text.kind = "characters"


def _nested_text(name, value, ctx):
    """Mappings and lists (e.g. pools) whose strings reach a config file: no line breaks or control characters."""
    if isinstance(value, dict):
        items = [(f"{name}.{key}", item) for key, item in value.items()] + [(name, key) for key in value]
    elif isinstance(value, list):
        items = [(f"{name}[{index}]", item) for index, item in enumerate(value)]
    else:
        items = []
        if isinstance(value, str) and _CONTROL.search(value):
            return f"{name}: {_describe(value)} holds a line break or control character; remove them"
    for where, item in items:
        problem = _nested_text(where, item, ctx)
        if problem:
            return problem
    return None


_nested_text.kind = "characters"


def _ca_certificates(name, value, ctx):
    if not isinstance(value, list):
        return f"{name}: {_describe(value)} is not a list; set a list of {{name, src | content}}"
    for index, item in enumerate(value):
        if not isinstance(item, dict):
            return f"{name}[{index}]: {_describe(item)} is not a mapping; set name and src or content"
        if item.get("name") not in (None, "") and not _NAME.match(str(item["name"])):
            return f"{name}[{index}].name: {item['name']!r} is not a file name; use letters, digits, '.', '_' and '-'"
        if item.get("src") not in (None, "") and _CONTROL.search(str(item["src"])):
            return f"{name}[{index}].src holds a line break or control character; remove them"
    return None


_ca_certificates.kind = "characters"


def _nofile_or_memlock(name, value, ctx):
    text = str(value)
    if text in ("unlimited", "infinity") or text.isdigit():
        return None
    return f"{name}: {text!r} is neither a number nor 'unlimited'; set one of them"


_nofile_or_memlock.kind = "out_of_range"


# CPU lists per rank, ranks separated by '|' (VLLM_CPU_OMP_THREADS_BIND).
_SOURCE = re.compile(r"^[0-9A-Fa-f.:]+(/[0-9]{1,3})?$")
# vllm_metrics_sources: an address, a network or a host name (the route guard resolves names when the engine starts).
_metrics_source_text = _regex(re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:/-]*$"),
                              "an IP address, a CIDR network or a host name")
# The widest network that may read /metrics without the key: an IPv4 /8 (10.0.0.0/8) or an IPv6 /32 (a site's
# allocation).  An IPv6 network reaches IPv4 clients too through their mapped addresses (::ffff:a.b.c.d, what a
# dual-stack listener on '::' sees), so its part of ::ffff:0:0/96 counts as the IPv4 network it is.
METRICS_SOURCE_MIN_PREFIX = {4: 8, 6: 32}
_IPV4_MAPPED = ipaddress.ip_network("::ffff:0:0/96")


def metrics_source_problem(entry):
    """Why ``entry`` (of vllm_metrics_sources) opens /metrics to too many addresses, or None.

    Parsed as the route guard parses it (``ipaddress.ip_network(entry, strict=False)``: 10.0.0.5/8 is 10.0.0.0/8);
    a host name is not a network and passes."""
    try:
        network = ipaddress.ip_network(str(entry).strip(), strict=False)
    except ValueError:
        return None
    widest = METRICS_SOURCE_MIN_PREFIX
    if network.version == 6 and network.overlaps(_IPV4_MAPPED) and network.prefixlen - 96 < widest[4]:
        return (f"{str(entry)!r} ({network}) covers an IPv4 network wider than /{widest[4]} through its mapped "
                "addresses (::ffff:a.b.c.d, the IPv4 clients of a dual-stack listener)")
    if network.prefixlen < widest[network.version]:
        return f"{str(entry)!r} ({network}) is wider than /{widest[network.version]}"
    return None


def _metrics_source(name, value, ctx):
    problem = _metrics_source_text(name, value, ctx)
    if problem:
        return problem
    wide = metrics_source_problem(value)
    if wide:
        return (f"{name}: {wide}, and every address in it would read /metrics without the API key; name the "
                f"Prometheus servers, or networks no wider than /{METRICS_SOURCE_MIN_PREFIX[4]} (IPv4) or "
                f"/{METRICS_SOURCE_MIN_PREFIX[6]} (IPv6)")
    return None


_metrics_source.kind = "characters"
_firewall_source = _regex(_SOURCE, "an IPv4/IPv6 address or CIDR network (e.g. 10.0.0.0/8)")
_PORT_RANGE = re.compile(r"^[0-9]{1,5}(-[0-9]{1,5})?$")


def _firewall_rules(name, value, ctx):
    """Each rule: ports 1-65535 (or "a-b" ranges) and address/CIDR sources."""
    if value is None:
        return None
    if not isinstance(value, list):
        return f"{name}: {_describe(value)} is not a list; set a list of {{ports, sources}} rules"
    for index, rule in enumerate(value):
        where = f"{name}[{index}]"
        if not isinstance(rule, dict):
            return f"{where}: {_describe(rule)} is not a rule; set {{ports: [...], sources: [...]}}"
        for port in rule.get("ports") or []:
            text = str(port)
            if not _PORT_RANGE.match(text) or not all(1 <= int(p) <= 65535 for p in text.split("-")):
                return f"{where}.ports: {_describe(port)} is out of range; set ports from 1 to 65535 or a range a-b"
        problem = _list_of(_firewall_source)(f"{where}.sources", rule.get("sources") or [], ctx)
        if problem:
            return problem
    return None


_firewall_rules.kind = "out_of_range"


_CPU_LIST = r"[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*"
_CPU_BIND = re.compile(rf"^{_CPU_LIST}(\|{_CPU_LIST})*$")


def _omp_bind(name, value, ctx):
    problem = _env_text_problem(name, value)
    if problem:
        return problem
    if value in ("auto", "all", "nobind") or _CPU_BIND.match(str(value)):
        return None
    return f"{name}: {value!r} is not a CPU binding; set auto, nobind or CPU ranges such as 0-31|32-63"


_omp_bind.kind = "characters"


def _backend(name, value, ctx):
    """``auto`` or a backend of the registry.  The role's argument spec lists no choices, so a new backend
    (a module of plugins/module_utils/backends/) edits no spec or documentation to be accepted."""
    if value in backends.CHOICES_WITH_AUTO:
        return None
    return f"{name}: {value!r} is not a backend; set one of {', '.join(backends.CHOICES_WITH_AUTO)}"


_backend.kind = "choice"
_backend.choices = backends.CHOICES_WITH_AUTO

# Variables whose values are never repeated in a message (argument_specs no_log): their rules in RULES mask them
# in whatever they say (_masked, below the table).  Index URLs and find-links locations may carry user:password@.
SECRETS = ("vllm_api_key", "vllm_hf_token", "vllm_modelscope_token", "gateway_api_keys", "vllm_pip_index_url",
           "vllm_pip_extra_index_urls", "wheelhouse_index_url", "base_pip_index_url", "base_pip_extra_index_urls",
           "base_pip_find_links", "monitoring_grafana_admin_password")


def _texts(value):
    if isinstance(value, dict):
        return [text for key, item in value.items() for text in _texts(key) + _texts(item)]
    if isinstance(value, (list, tuple)):
        return [text for item in value for text in _texts(item)]
    return [] if value is None or isinstance(value, bool) else [str(value)]


def without_secret(problem, value):
    """``problem`` with each text of the secret ``value`` (a string, or the strings of a list or mapping) replaced
    by 'the value', quoted or bare (a bare text of fewer than 8 characters is left: it would garble the message)."""
    for text in sorted(set(_texts(value)), key=len, reverse=True):
        if text:
            problem = problem.replace(repr(text), "the value")
            if len(text) >= 8:
                problem = problem.replace(text, "the value")
    return problem


# A repository or package URL the role writes into a file every local user reads (a sources.list or .repo file) or
# hands to a download task: no credentials in it (review round 3).
_REPO_CREDENTIALS = ("a repository file every local user reads, and the play's output",
                     "serve the mirror or packages to the nodes' network without them")
_repo_url = _no_credentials(_url, *_REPO_CREDENTIALS)
# A driver runfile's URL goes to the driver plan's and the download's arguments, shown at -vvv (review round 5).
_download_src = _no_credentials(_model_src, "the driver plan's and the download's arguments, which -vvv shows",
                                "serve the file to the nodes' network without them")


# role -> variable -> rule.  A variable that argument validation fully covers
# (a bool, or a str with choices) has the rule None.
RULES = {
    "vllm": {
        "vllm_backend": _backend,
        "vllm_version": _version,
        "vllm_install_method": None,
        "vllm_container_image": _regex(re.compile(r"^[a-z0-9][a-z0-9._/:@-]*$"),
                                       "an image reference such as quay.io/ascend/vllm-ascend@sha256:<digest>", empty=True),
        "vllm_container_archive": _opt_controller_path,
        "vllm_container_archive_dir": _path,
        "vllm_container_allow_unpinned": None,
        "vllm_container_runtime": None,
        # Each item lands quoted on the unit's ExecStart line.
        "vllm_container_command": _list_of(_regex(re.compile(r"^[A-Za-z0-9/._=-][A-Za-z0-9/._=:-]*$"),
                                                  "a command word of letters, digits and / . _ = : -")),
        "vllm_container_read_only": None,
        # Its size against the host's memory is plan/container.py memory_limit_mib's (the container plan).
        "vllm_container_memory_limit": _regex(container.MEMORY_LIMIT, "auto, none, or a size such as 64g or 65536m"),
        "vllm_source_url": _no_credentials(_opt_requirement),
        "vllm_cpu_remove_packages": _list_of(_requirement),
        "vllm_extra_packages": _list_of(_no_credentials(_requirement)),
        "vllm_install_dir": _path,
        "vllm_python": _path,
        "vllm_install_os_packages": None,
        "vllm_wheelhouse_src": _opt_controller_path,
        "vllm_pip_index_url": _url,
        "vllm_pip_extra_index_urls": _list_of(_regex(_URL, "an http(s):// URL without white space or shell characters")),
        "vllm_pip_find_links": _list_of(_no_credentials(_path_or_url)),
        "vllm_pip_no_index": None,
        "vllm_pip_timeout": _int_range(1, 86400),
        "vllm_wheelhouse_requirements": _opt_name,
        "vllm_wheelhouse_cache_dir": _opt_controller_path,
        "vllm_installer": None,
        "vllm_reuse_host_torch": None,
        "vllm_host_torch_python": _opt_path,
        "vllm_engine_artifact_mode": None,
        # Created when missing: absolute, not required to exist.
        "vllm_engine_artifact_dir": _opt_controller_path,
        # https only (http with vllm_engine_artifact_allow_http): a shared
        # mount is vllm_engine_artifact_mode shared.
        "vllm_engine_artifact_url": _no_credentials(
            _artifact_url, "the download's arguments and the plan's messages",
            "serve the artifact from a location the nodes reach without them (its sha256 pin is what is trusted)"),
        "vllm_engine_artifact_sha256": _list_of(_regex(_SHA256, "64 hexadecimal digits (the sha256 the builder's "
                                                                "publish step printed)")),
        "vllm_engine_artifact_unpinned": None,
        "vllm_engine_artifact_allow_http": None,
        # 0: derived from the archive (safe_extract.Budget.for_archive).
        "vllm_unpack_max_bytes": _int_range(0),
        "vllm_unpack_max_members": _int_range(0),
        "vllm_model_source": None,
        "vllm_model_src": _model_src,
        "vllm_model_sha256": _sha256,
        "vllm_model_verify": None,
        "vllm_model_params_b": _float_range(0, 10000),
        "vllm_model_weight_dtype": None,
        "vllm_nodes": _int_range(1, 4096),
        "vllm_cluster_group": _opt_name,
        "vllm_cluster_executor": None,
        "vllm_cluster_network": _regex(re.compile(r"^[0-9]{1,3}(\.[0-9]{1,3}){3}/[0-9]{1,2}$"),
                                       "an IPv4 network in CIDR form such as 10.30.0.0/16", empty=True),
        "vllm_cluster_interface": _regex(re.compile(r"^[A-Za-z0-9._@:-]{1,15}$"),
                                         "an interface name such as eth0 or ib0 (15 characters at most)", empty=True),
        "vllm_cluster_ports": _cluster_ports,
        "vllm_cluster_ray_units": None,
        "vllm_cluster_ray_allow_unauthenticated": None,
        "vllm_cluster_ray_token_rotate": None,
        "vllm_cluster_expose_unauthenticated_ports": None,
        "vllm_model_revision": _regex(re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]*$"), "a branch, tag or commit", empty=True),
        "vllm_model_dir": _path,
        "vllm_model_name": _name,
        "vllm_hf_endpoint": _no_credentials(
            _url, "the download's environment and its progress messages",
            "the token through vllm_hf_token, which the role hands to the download in a file only root reads"),
        "vllm_hf_token": _env_value(re.compile(r"^\S+$"), "a token without white space", secret=True),
        "vllm_modelscope_token": _env_value(re.compile(r"^\S+$"), "a token without white space", secret=True),
        # Progress at least every 30 s (AWX and a terminal show each poll); 0 never stops a quiet step.
        "vllm_progress_interval": _int_range(1, 30),
        "vllm_progress_stall_timeout": _int_range(0, 2592000),
        "vllm_progress_timeout": _int_range(60, 2592000),
        "vllm_instance_name": _name,
        "vllm_host": _host,
        "vllm_port": _int_range(1, 65535),
        # Written unquoted (clients and playbooks/benchmark.yml read it back as is).
        "vllm_api_key": _api_key(_env_value(_API_KEY, "a key of letters, digits and . _ + / = - (base64, hex or a UUID)",
                                            secret=True)),
        "vllm_engine_args": _engine_args,
        "vllm_visible_devices": _env_value(_DEVICES, "device indices or UUIDs separated by ',' (for example 0,1)"),
        "vllm_environment": _environment,
        "vllm_environment_files": _list_of(_path),
        "vllm_cpu_kvcache_space_gib": _kv_cache,
        "vllm_cpu_omp_threads_bind": _omp_bind,
        "vllm_user": _service_account,
        "vllm_group": _account,
        "vllm_config_dir": _path,
        "vllm_cache_dir": _path,
        "vllm_limit_nofile": _int_range(1024, 1073741816),
        "vllm_private_users": None,
        "vllm_allow_unauthenticated": None,
        "vllm_api_key_controller_file": _opt_controller_path,
        "vllm_metrics_sources": _list_of(_metrics_source),
        "vllm_restart_sec": _int_range(0, 3600),
        "vllm_service_manager": None,
        "vllm_ready_check": None,
        "vllm_ready_timeout": _int_range(1, 86400),
        "vllm_ready_prompt": _text(empty=False),
        "vllm_ready_host": _host,
        "vllm_ready_expect": _text(),
        "vllm_ready_expect_regex": _text(),
        # A controller path, relative to where ansible-playbook runs (playbooks/diagnose.yml).
        "vllm_diagnose_report_dir": _text(empty=False),
        "vllm_diagnose_log": _opt_path,
    },
    "base": {
        "base_service_user": _service_account,
        "base_service_group": _account,
        "base_service_home": _path,
        "base_install_dir": _path,
        "base_config_dir": _path,
        "base_model_dir": _path,
        "base_cache_dir": _path,
        "base_packages_extra": _list_of(_regex(re.compile(r"^[A-Za-z0-9][A-Za-z0-9.+_:=~*-]*$"), "an OS package name")),
        "base_driver_build": None,
        "base_build_toolchain": None,
        "base_apt_cache_valid_time": _int_range(0),
        "base_ca_certificates": _ca_certificates,
        "base_apt_mirror_url": _repo_url,
        "base_apt_mirror_suites": _list_of(_name),
        "base_apt_mirror_components": _list_of(_name),
        "base_dnf_mirror_url": _repo_url,
        "base_dnf_mirror_repos": _list_of(_name),
        "base_dnf_mirror_gpgcheck": None,
        "base_pip_conf_path": _path,
        "base_pip_index_url": _url,
        "base_pip_extra_index_urls": _list_of(_regex(_URL, "an http(s):// URL without white space or shell characters")),
        "base_pip_trusted_hosts": _list_of(_host),
        "base_pip_find_links": _list_of(_path_or_url),
        "base_pip_use_system_ca": None,
        "base_tune_swappiness": None,
        "base_swappiness": _int_range(0, 200),
        "base_tune_numa_balancing": None,
        "base_numa_balancing": None,
        "base_tune_limits": None,
        "base_nofile_limit": _int_range(1024, 1073741816),
        "base_memlock_limit": _nofile_or_memlock,
        "base_tune_thp": None,
        "base_thp_mode": None,
        "base_tune_cpu_governor": None,
        "base_cpu_governor": _regex(re.compile(r"^(performance|powersave|ondemand|conservative|schedutil|userspace)$"),
                                    "a cpufreq governor (performance, powersave, ondemand, conservative, schedutil)"),
        "base_time_sync": None,
        "base_firewall_manage": None,
        "base_firewall_ports": _list_of(_int_range(1, 65535)),
        "base_firewall_sources": _list_of(_firewall_source),
        "base_firewall_rules": _firewall_rules,
    },
    "monitoring": {
        "monitoring_vllm_groups": _list_of(_name),
        "monitoring_gateway_groups": _list_of(_name),
        "monitoring_server_group": _name,
        "monitoring_address": _opt_host,
        "monitoring_node_exporter_port": _port,
        "monitoring_vllm_port": _opt_port,
        "monitoring_gateway_metrics_port": _opt_port,
        "monitoring_listen_address": _opt_host,
        "monitoring_sources": _list_of(_firewall_source),
        "monitoring_prometheus_sources": _list_of(_firewall_source),
        "monitoring_dcgm_exporter_port": _port,
        "monitoring_npu_exporter_port": _port,
        "monitoring_dcgm_exporter_package": _opt_name,
        "monitoring_npu_exporter_package": _opt_name,
        "monitoring_collector": None,
        "monitoring_collector_interval": _duration,
        "monitoring_collector_tool_dirs": _list_of(_path),
        "monitoring_textfile_dir": _path,
        "monitoring_prometheus_package": _name,
        "monitoring_node_exporter_package": _name,
        "monitoring_prometheus_service": _name,
        "monitoring_node_exporter_service": _name,
        "monitoring_prometheus_mode": None,
        "monitoring_targets_dir": _path,
        "monitoring_prometheus_port": _port,
        "monitoring_scrape_interval": _duration,
        "monitoring_evaluation_interval": _duration,
        "monitoring_retention_time": _duration,
        "monitoring_retention_size": _regex(re.compile(r"^[0-9]+(B|KB|MB|GB|TB|PB|EB)$"),
                                            "a size such as 50GB (B, KB, MB, GB, TB, PB, EB)", empty=True),
        "monitoring_alert_for": _duration,
        "monitoring_alert_instance_down_for": _duration,
        "monitoring_alert_gateway_maintenance_for": _duration,
        "monitoring_alert_accelerator_memory_ratio": _float_range(0, 1),
        "monitoring_alert_error_ratio": _float_range(0, 1),
        "monitoring_alert_p99_latency_seconds": _float_range(0),
        "monitoring_alert_waiting_requests": _int_range(1),
        "monitoring_alert_kv_cache_ratio": _float_range(0, 1),
        "monitoring_grafana_package": _opt_name,
        "monitoring_grafana_repository": _no_credentials(_text(), *_REPO_CREDENTIALS),
        "monitoring_grafana_repository_key_url": _no_credentials(_url, *_REPO_CREDENTIALS),
        "monitoring_grafana_provisioning_dir": _path,
        "monitoring_grafana_dashboards_dir": _path,
        "monitoring_grafana_port": _int_range(1, 65535),
        # Written into grafana-server's environment file (GF_SECURITY_ADMIN_PASSWORD).
        "monitoring_grafana_admin_password": _env_value(re.compile(r"^\S{12,}$"),
                                                        "a password of 12 or more characters without white space",
                                                        secret=True),
        "monitoring_private_users": None,
        "monitoring_vendor_exporter_services": _dict_of_text,
    },
    "gateway": {
        "gateway_pools": _nested_text,
        "gateway_default_pool": _opt_name,
        "gateway_dispatch_size_tokens": _int_range(1, 1000000),
        "gateway_dispatch_load": _float_range(0.01, 1.0),
        "gateway_dispatch_bytes_per_token": _int_range(1, 16),
        "gateway_retry_after": _int_range(1, 3600),
        "gateway_backend_address": _opt_host,
        "gateway_backend_port": _int_range(0, 65535),
        "gateway_bind_address": _host,
        "gateway_port": _port,
        "gateway_tls_certificate": _opt_controller_path,
        "gateway_tls_key": _opt_controller_path,
        "gateway_tls_port": _port,
        "gateway_api_keys": _list_of(_api_key(_regex(_API_KEY, "a key of letters, digits and . _ + / = -", secret=True))),
        "gateway_timeout_connect": _int_range(1, 86400),
        "gateway_timeout_client": _int_range(1, 86400),
        "gateway_timeout_server": _int_range(1, 86400),
        "gateway_timeout_queue": _int_range(1, 86400),
        "gateway_health_interval": _int_range(1, 3600),
        "gateway_health_fall": _int_range(1, 100),
        "gateway_health_rise": _int_range(1, 100),
        "gateway_retries": _int_range(0, 100),
        "gateway_maxconn": _int_range(1, 1000000),
        "gateway_max_body_kib": _int_range(1, 1048576),
        "gateway_runtime_socket": _path,
        "gateway_metrics_port": _int_range(0, 65535),
    },
    "wheelhouse": {
        "wheelhouse_backend": None,
        "wheelhouse_vllm_version": _regex(_VERSION, "a version such as 0.11.0"),
        "wheelhouse_python_version": _regex(re.compile(r"^3\.[0-9]+$"), "a Python version such as 3.12"),
        "wheelhouse_architecture": None,
        "wheelhouse_glibc": _regex(re.compile(r"^2\.[0-9]+$"), "a glibc version such as 2.34"),
        "wheelhouse_dest": _controller_path,
        "wheelhouse_target_freeze": _opt_controller_path,
        "wheelhouse_leave_out": _list_of(_requirement),
        "wheelhouse_uv": _regex(re.compile(r"^[A-Za-z0-9/][A-Za-z0-9._/+-]*$"), "a command name or an absolute path"),
        "wheelhouse_python": _controller_path,
        "wheelhouse_uv_wheel": _no_credentials(_opt_requirement),
        "wheelhouse_index_url": _url,
    },
}

# Named rules a backend's class may give its driver role's variables (``driver_rules``: variable -> None, or
# (name,) / ("int_range", lowest, highest) / ("regex", pattern, what)), so a new backend's driver role needs no
# table here: the registry's driver roles are added to RULES below.
_DECLARED = {
    "version": _version, "url": _repo_url, "path": _path, "opt_path": _opt_path, "controller_path": _controller_path,
    "account": _account, "sha256": _sha256, "model_src": _model_src, "download_src": _download_src, "dict_of_text": _dict_of_text, "text": _text(),
}


def _declared_rule(spec):
    """The rule a backend's ``driver_rules`` entry names (None: argument validation is enough)."""
    if spec is None:
        return None
    kind, args = spec[0], spec[1:]
    if kind == "int_range":
        return _int_range(*args)
    if kind == "regex":
        return _regex(re.compile(args[0]), args[1])
    if kind not in _DECLARED:
        raise ValueError(f"unknown rule {kind!r}; one of int_range, regex, {', '.join(sorted(_DECLARED))}")
    return _DECLARED[kind]


RULES.update({instance.record["driver"]["role"].split(".")[-1]: {name: _declared_rule(spec) for name, spec in instance.driver_rules.items()}
              for instance in backends.INSTANCES.values() if instance.record.get("driver")})


def _masked(rule):
    """``rule``, its message with the value masked (without_secret): the rule of a variable of SECRETS."""
    def checked(name, value, ctx):
        problem = rule(name, value, ctx)
        return without_secret(problem, value) if problem else problem
    for attribute in ("kind", "bounds", "choices"):
        if hasattr(rule, attribute):
            setattr(checked, attribute, getattr(rule, attribute))
    return checked


for _rules in RULES.values():
    for _name in SECRETS:
        if _rules.get(_name) is not None:
            _rules[_name] = _masked(_rules[_name])

# role -> variable -> where the path it names must exist: 'node' or
# 'controller' (a condition on the other values may turn the check off).
PATHS = {
    "vllm": {
        "vllm_python": ("node", None),
        "vllm_host_torch_python": ("node", None),
        "vllm_wheelhouse_src": ("controller", None),
        "vllm_model_src": ("node", ("vllm_model_source", "local")),
        "vllm_model_src@controller": ("controller", ("vllm_model_source", "controller")),
    },
    # The wheelhouse role runs on the controller: its node is the controller.
    "wheelhouse": {"wheelhouse_target_freeze": ("node", None)},
}


def check_values(role, values, vllm_version=None, memory_mb=None):
    """Every problem with ``values`` (variable -> value) of ``role``, one message each, variables in table order.

    Variables absent from ``values`` are not checked (argument validation
    supplies defaults); variables unknown to the table are ignored.
    """
    if role not in RULES:
        raise ValueError(f"unknown role {role!r}; one of {', '.join(sorted(RULES))}")
    ctx = {"vllm_version": vllm_version if vllm_version is not None else values.get("vllm_version"),
           "memory_mb": memory_mb, "values": values}
    problems = []
    for name, rule in RULES[role].items():
        if rule is None or name not in values:
            continue
        problem = rule(name, values[name], ctx)
        if problem:
            problems.append(problem)
    return problems


def bounds(role, name):
    """(lowest, highest) a numeric variable of ``role`` may take; highest is None when only the lowest is fixed.

    None when the variable has no range rule.  Forms that ask for the value
    (the AWX surveys of scripts/awx_survey.py) take their limits from here.
    """
    return getattr(RULES.get(role, {}).get(name), "bounds", None)


def choices(role, name):
    """The values a variable of ``role`` may take when its rule, not its argument spec, holds them; else None.

    Forms that ask for the value (the AWX surveys of scripts/awx_survey.py) offer them as a multiple choice.
    """
    return getattr(RULES.get(role, {}).get(name), "choices", None)


def paths_to_check(role, values, where):
    """variable -> path of ``values`` that must exist ``where`` ('node' or 'controller')."""
    found = {}
    for key, (place, condition) in PATHS.get(role, {}).items():
        name = key.split("@")[0]
        value = values.get(name)
        if place != where or value in (None, ""):
            continue
        if condition is not None and values.get(condition[0]) != condition[1]:
            continue
        if not str(value).startswith("/"):  # a URL or a repository id
            continue
        found[name] = str(value)
    return found


def missing_paths(paths, exists=os.path.exists, where="node"):
    """A message for each variable whose path does not exist (checked with ``exists``)."""
    return [f"{name}: {path} does not exist on the {where}; create it or point {name} at an existing path"
            for name, path in sorted(paths.items()) if not exists(path)]


def summary(problems):
    """One message for the whole request."""
    if not problems:
        return "every value is usable"
    count = "{} problem{}".format(len(problems), "" if len(problems) == 1 else "s")
    return "input check failed before any change ({}): {}".format(count, " | ".join(problems))
