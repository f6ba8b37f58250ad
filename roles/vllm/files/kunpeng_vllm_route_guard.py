# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""The API key on every route of a vLLM server: an ASGI middleware for ``vllm serve --middleware``.

vLLM's own check (``--api-key`` / ``VLLM_API_KEY``) guards only the paths under
``/v1``, ``/v2``, ``/inference`` and ``/cohere`` (vllm/entrypoints/serve/middleware/
authenticate.py, GUARDED_PREFIX): ``/invocations``, ``/pooling``, ``/score``,
``/rerank``, ``/tokenize``, ``/classify``, ``/metrics``, ``/openapi.json`` and the
rest answer without it.  This class, which vLLM adds with ``app.add_middleware``
(vllm/entrypoints/serve/middleware/register.py), refuses with 401 every HTTP
request and WebSocket that does not carry ``Authorization: Bearer <VLLM_API_KEY>``,
except:

- ``/health``, so load balancers and the role's readiness check need no key;
- ``/metrics`` from loopback and from the addresses in ``KUNPENG_VLLM_METRICS_SOURCES``
  (comma-separated addresses, networks or host names, resolved once at start):
  the Prometheus servers that scrape it.  ``KUNPENG_VLLM_METRICS_LOOPBACK=off`` takes
  loopback out: a pod sets it, since a proxy beside the engine (a service mesh's
  sidecar) connects from loopback for every client it forwards;
- CORS preflights (``OPTIONS`` with ``Access-Control-Request-Method``), which
  vLLM's CORS middleware answers without reaching a route, as vLLM's own check does.

kunpeng.vllm installs it beside the engine (root, 0644) and names it in the engine
config whenever the instance has an API key.  Only the standard library is used.
"""

import hashlib
import hmac
import ipaddress
import os
import socket

OPEN_PATHS = frozenset(("/health",))
METRICS_PATH = "/metrics"
SOURCES_VARIABLE = "KUNPENG_VLLM_METRICS_SOURCES"
LOOPBACK_VARIABLE = "KUNPENG_VLLM_METRICS_LOOPBACK"
#: The values of LOOPBACK_VARIABLE: whether loopback reads /metrics without the key (unset: on, the host default).
LOOPBACK_VALUES = {"": True, "on": True, "off": False}
_BODY = b'{"error":"Unauthorized"}'


def _digest(value):
    return hashlib.sha256(value.encode("utf-8")).digest()


def loopback_keyless(value):
    """Whether loopback reads /metrics without the key: ``value`` of LOOPBACK_VARIABLE, unset or on, or off."""
    setting = (value or "").strip().lower()
    if setting not in LOOPBACK_VALUES:
        raise RuntimeError(f"kunpeng_vllm_route_guard: {LOOPBACK_VARIABLE}={value!r} is not on or off")
    return LOOPBACK_VALUES[setting]


def metrics_networks(spec, loopback=True):
    """The networks allowed to read /metrics without the key: ``spec``'s entries, and loopback unless told not."""
    networks = [ipaddress.ip_network("127.0.0.0/8"), ipaddress.ip_network("::1/128")] if loopback else []
    for entry in (item.strip() for item in (spec or "").split(",")):
        if not entry:
            continue
        try:
            networks.append(ipaddress.ip_network(entry, strict=False))
            continue
        except ValueError:
            pass
        try:  # a host name: the addresses it has when the engine starts
            infos = socket.getaddrinfo(entry, None, proto=socket.IPPROTO_TCP)
        except OSError:
            continue
        networks.extend(ipaddress.ip_network(info[4][0]) for info in infos)
    return networks


class RouteGuard:
    """Pure ASGI middleware; vLLM constructs it with the app only, so the key comes from the environment."""

    def __init__(self, app):
        key = os.environ.get("VLLM_API_KEY", "")
        if not key:
            raise RuntimeError("kunpeng_vllm_route_guard: VLLM_API_KEY is empty; refusing to serve every route open")
        self.app = app
        self._key = _digest(key)
        self._metrics = metrics_networks(os.environ.get(SOURCES_VARIABLE, ""),
                                         loopback_keyless(os.environ.get(LOOPBACK_VARIABLE, "")))

    def _authorized(self, headers):
        value = headers.get(b"authorization", b"").decode("latin-1")
        scheme, _space, token = value.partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(_digest(token), self._key)

    def _metrics_source(self, scope):
        client = scope.get("client") or ("", 0)
        try:
            address = ipaddress.ip_address(client[0])
        except ValueError:
            return False
        if getattr(address, "ipv4_mapped", None):
            address = address.ipv4_mapped
        return any(address in network for network in self._metrics)

    def allowed(self, scope):
        """Whether the request may reach vLLM."""
        path = scope.get("path", "")
        root = scope.get("root_path", "")
        if root and path.startswith(root):
            path = path[len(root):] or "/"
        headers = dict(scope.get("headers") or [])
        if self._authorized(headers):
            return True
        if scope["type"] == "http" and path in OPEN_PATHS:
            return True
        if scope["type"] == "http" and path == METRICS_PATH and self._metrics_source(scope):
            return True
        # Only a real CORS preflight (Origin and Access-Control-Request-Method) passes keyless: vLLM's CORS
        # middleware answers it without reaching a route.  Without Origin that middleware passes the request on,
        # so a keyless OPTIONS would reach the app (the /metrics mount answers every method).
        return (scope["type"] == "http" and scope.get("method") == "OPTIONS"
                and b"access-control-request-method" in headers and b"origin" in headers)

    async def __call__(self, scope, receive, send):
        if scope["type"] not in ("http", "websocket") or self.allowed(scope):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            # Closing before accepting makes the server answer the handshake with 403.
            await send({"type": "websocket.close", "code": 1008})
            return
        await send({"type": "http.response.start", "status": 401,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(_BODY)).encode()),
                                (b"www-authenticate", b"Bearer")]})
        await send({"type": "http.response.body", "body": _BODY})
