# -*- coding: utf-8 -*-  # noqa: UP009
# Copyright: kunpeng.vllm contributors
# Apache License 2.0 (see LICENSE)
"""Talk to a vLLM OpenAI-compatible server and judge whether it is ready.

A vLLM unit that systemd reports as "active" may still be loading weights for
minutes, or may be crash-looping while systemd restarts it.  Readiness is
therefore decided from what the server answers: ``/health`` turns 200 once the
engine is up, ``/v1/models`` must list the served name the clients will use,
and one greedy chat completion proves that the model generates.  When the
systemd unit name is known, its state is read on every poll so that a unit
that has failed ends the wait at once, with its journal, instead of after the
whole deadline.

Everything here is a plain function over strings, dicts and callables so the
module stays a thin shell and the logic is tested without a host.
"""

from __future__ import absolute_import, division, print_function  # noqa: UP010

__metaclass__ = type  # noqa: UP001

import json
import re
import socket
import time
from urllib.error import HTTPError, URLError

from ansible.module_utils.urls import open_url

# How long one HTTP request may take.  Generation requests get the rest of
# the deadline instead: a cold CPU server can take tens of seconds per answer.
PROBE_TIMEOUT = 10

# A unit seen "inactive" for this long is not coming back by itself (a
# restart in progress shows as "activating"/"auto-restart", not "inactive").
INACTIVE_GRACE_S = 10

UNIT_PROPERTIES = ("ActiveState", "SubState", "NRestarts", "ExecMainStatus")

DEFAULT_PORT = 8000

# Addresses a server binds to in order to listen everywhere; a client reaches
# such a server on the loopback address of the same family.
WILDCARD_HOSTS = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1", "[::]": "::1"}


class VllmNotReady(Exception):
    """The server did not become ready, or answered wrongly.

    ``journal`` carries the unit's recent log lines when they explain why.
    """

    def __init__(self, msg, journal=None, **details):
        super().__init__(msg)
        self.msg = msg
        self.journal = journal
        self.details = details


class HttpResult:
    """Outcome of one request: ``status`` is None when no HTTP answer came."""

    def __init__(self, status=None, body="", error=None):
        self.status = status
        self.body = body
        self.error = error

    def json(self):
        """Return the body as JSON, or raise ValueError naming what came instead."""
        try:
            return json.loads(self.body)
        except ValueError:
            raise ValueError(f"expected JSON, got {snippet(self.body)!r}") from None

    def describe(self):
        """Short human description, used in 'last seen' messages."""
        if self.status is None:
            return self.error or "no answer"
        text = snippet(self.body)
        return f"HTTP {self.status}" + (f": {text}" if text else "")


def snippet(text, limit=200):
    """First ``limit`` characters of ``text`` on one line (error messages stay readable)."""
    text = " ".join(str(text or "").split())
    return text if len(text) <= limit else text[:limit] + "..."


def join_url(base, path):
    """Join the server base URL and an endpoint path, tolerating a trailing '/'."""
    return base.rstrip("/") + "/" + path.lstrip("/")


def base_url(url=None, host=None, port=None):
    """The server base URL the check talks to: ``url`` as given, else built from ``host`` and ``port``.

    ``host`` may be the address vLLM was told to listen on (``vllm serve
    --host``): a wildcard (``0.0.0.0``, ``::`` or empty) means "every
    address", which the same machine reaches on loopback.  An IPv6 literal
    gets the brackets a URL needs.  Raises ValueError for a host that is a
    URL or carries a port, naming the option to use instead.
    """
    if url:
        return url
    if host is None:
        host = "127.0.0.1"
    host = host.strip()
    port = DEFAULT_PORT if port is None else port
    if "/" in host:
        raise ValueError(f"host {host!r} looks like a URL: give the address or name in host, "
                         "or the whole base URL in url")
    host = WILDCARD_HOSTS.get(host, host)
    if host.startswith("[") and not host.endswith("]") or not host.startswith("[") and host.count(":") == 1:
        raise ValueError(f"host {host!r} carries a port: give the address in host and the port in port")
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"  # an IPv6 literal
    return f"http://{host}:{port}"


def compile_expect_regex(pattern):
    """Compile ``expect_regex`` before any waiting; ValueError names the option and the error."""
    if not pattern:
        return None
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"expect_regex {pattern!r} is not a valid Python regular expression: {exc}") from None


def request_headers(api_key=None, with_body=False):
    """Headers for vLLM: a Bearer token when an API key is set (checked on /v1 only)."""
    headers = {"Accept": "application/json"}
    if with_body:
        headers["Content-Type"] = "application/json"
    if api_key:
        headers["Authorization"] = "Bearer " + api_key
    return headers


def http_request(url, method="GET", payload=None, api_key=None, timeout=PROBE_TIMEOUT, validate_certs=True):
    """Send one request with Ansible's ``open_url`` and never raise for HTTP or network errors.

    Polling code needs "what did we see" rather than exceptions: a refused
    connection and a 503 are both normal while vLLM starts.
    """
    data = json.dumps(payload) if payload is not None else None
    headers = request_headers(api_key, with_body=data is not None)
    try:
        response = open_url(url, data=data, headers=headers, method=method, timeout=timeout,
                            validate_certs=validate_certs, follow_redirects="safe")
        body = response.read()
        return HttpResult(response.getcode(), body.decode("utf-8", "replace"))
    except HTTPError as exc:
        try:
            body = exc.read().decode("utf-8", "replace")
        except Exception:  # the error body is a nicety
            body = ""
        return HttpResult(exc.code, body)
    except URLError as exc:
        return HttpResult(error=f"cannot connect: {exc.reason}")
    except (socket.timeout, TimeoutError):
        return HttpResult(error=f"no answer within {timeout} s")
    except (OSError, ValueError) as exc:
        return HttpResult(error=f"request failed: {exc}")


def parse_model_ids(document):
    """Return the served model ids from a ``/v1/models`` list document."""
    data = document.get("data") if isinstance(document, dict) else None
    if not isinstance(data, list):
        raise ValueError("no 'data' list in the /v1/models answer")
    return [entry["id"] for entry in data if isinstance(entry, dict) and "id" in entry]


def chat_payload(model, prompt, max_tokens):
    """Greedy (temperature 0) chat request, so the answer is repeatable for ``expect``."""
    return {
        "model": model,
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": max_tokens,
        "temperature": 0,
        "stream": False,
    }


def parse_chat_completion(document):
    """Return ``(answer, completion_tokens)`` from an OpenAI ``chat.completion`` document.

    ``completion_tokens`` is None when the server sent no ``usage`` block.
    """
    try:
        message = document["choices"][0]["message"]
    except (KeyError, IndexError, TypeError):
        raise ValueError("no choices[0].message in the chat completion answer") from None
    answer = message.get("content") or ""
    usage = document.get("usage") or {}
    tokens = usage.get("completion_tokens")
    return answer, tokens if isinstance(tokens, int) else None


def tokens_per_second(tokens, seconds):
    """Decode speed of the check request (includes prefill, so it is a lower bound)."""
    if not tokens or seconds <= 0:
        return None
    return round(tokens / seconds, 2)


def answer_matches(answer, expect):
    """Case-insensitive substring test; no expectation always matches."""
    return not expect or expect.lower() in (answer or "").lower()


def answer_problem(answer, expect=None, expect_regex=None, prompt=None):
    """Why the answer is not the expected one, or None when it is (or nothing is expected).

    ``expect`` is a case-insensitive substring, ``expect_regex`` a compiled
    pattern searched anywhere in the answer (``re.search``); when both are
    given, both must hold.  The message shows the answer, so a model that
    loaded the wrong weights or a broken chat template is visible in the
    play's failure.
    """
    wanted = []
    if not answer_matches(answer, expect):
        wanted.append(f"does not contain {expect!r}")
    if expect_regex is not None and not expect_regex.search(answer or ""):
        wanted.append(f"does not match expect_regex {expect_regex.pattern!r}")
    if not wanted:
        return None
    asked = f" to {snippet(prompt, 80)!r}" if prompt else ""
    return f"the answer{asked} {' and '.join(wanted)}: {snippet(answer)!r}"


def parse_version(document):
    """``/version`` answers ``{"version": "0.11.0"}``; anything else means unknown."""
    if isinstance(document, dict) and isinstance(document.get("version"), str):
        return document["version"]
    return None


def read_version(result):
    """Version from a ``/version`` HttpResult; None when the server lacks the endpoint."""
    if result.status != 200:
        return None
    try:
        return parse_version(result.json())
    except ValueError:
        return None


def parse_unit_show(text):
    """Parse ``systemctl show -p A,B`` output (``KEY=VALUE`` lines) into a dict."""
    state = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            state[key.strip()] = value.strip()
    for key in ("NRestarts", "ExecMainStatus"):
        if state.get(key, "").isdigit():
            state[key] = int(state[key])
    return state


def unit_problem(state, inactive_for, restarts_before=None):
    """Return why the unit cannot become ready, or None while it still may.

    ``failed`` is final (systemd gave up restarting).  ``inactive`` is also
    final once it lasted ``INACTIVE_GRACE_S``: nothing is starting it again.
    A rise of ``NRestarts`` over ``restarts_before`` (the count when the wait
    began) means the server crashed while starting and ``Restart=on-failure``
    brought it back: a crash loop looks "activating"/"active" to systemd and
    would otherwise use up the whole deadline.
    Any other state (activating, auto-restart, active) keeps the wait going.
    """
    active = state.get("ActiveState", "")
    summary = (f"ActiveState={active} SubState={state.get('SubState', '')} "
               f"NRestarts={state.get('NRestarts', '?')} ExecMainStatus={state.get('ExecMainStatus', '?')}")
    if active == "failed":
        return "the unit has failed (" + summary + ")"
    if active == "inactive" and inactive_for >= INACTIVE_GRACE_S:
        return f"the unit stays inactive ({summary}); nothing is starting it"
    restarts = state.get("NRestarts")
    if isinstance(restarts, int) and isinstance(restarts_before, int) and restarts > restarts_before:
        return f"the server crashed while starting and systemd restarted it ({summary}, {restarts_before} when the wait began)"
    return None


def wait_for_health(probe, check_unit, timeout, interval, clock=time.monotonic, sleep=time.sleep):
    """Poll ``probe()`` (an HttpResult) until it answers 200; return the seconds waited.

    ``check_unit()`` runs before each probe and raises VllmNotReady when the
    service cannot come up (or is None without a service).  Raises
    VllmNotReady with the last thing seen when ``timeout`` passes.
    """
    start = clock()
    deadline = start + timeout
    last_seen = "nothing yet"
    polls = 0
    while True:
        if check_unit is not None:
            check_unit()
        result = probe()
        polls += 1
        if result.status == 200:
            return round(clock() - start, 2)
        last_seen = "GET /health: " + result.describe()
        remaining = deadline - clock()
        if remaining <= 0:
            raise VllmNotReady(
                f"vLLM was not healthy within {timeout} s ({polls} polls); last seen: {last_seen}",
                last_seen=last_seen)
        sleep(min(interval, remaining))


def check_models(result, model, url):
    """Return the served ids when ``model`` is among them, else raise VllmNotReady."""
    if result.status in (401, 403):
        raise VllmNotReady(api_key_message(result, url, "/v1/models"), status=result.status)
    if result.status != 200:
        raise VllmNotReady(f"GET {join_url(url, '/v1/models')} failed: {result.describe()}")
    try:
        ids = parse_model_ids(result.json())
    except ValueError as exc:
        raise VllmNotReady(f"GET {join_url(url, '/v1/models')}: {exc}") from None
    if model not in ids:
        raise VllmNotReady(
            f"model {model!r} is not served at {url}; served: {', '.join(ids) or 'none'} "
            "(set model to one of these, or fix served-model-name)", models=ids)
    return ids


def api_key_message(result, url, path):
    """Explain a 401/403 from vLLM's API-key middleware."""
    return (f"{url} refused the API key on {path} ({result.describe()}): "
            "give api_key the value of the server's --api-key / VLLM_API_KEY")


def require_answer(result, url, path):
    """Raise VllmNotReady unless the POST to ``path`` answered 200 (a refused API key says so)."""
    if result.status in (401, 403):
        raise VllmNotReady(api_key_message(result, url, path), status=result.status)
    if result.status != 200:
        raise VllmNotReady(f"POST {join_url(url, path)} failed: {result.describe()}")


def check_chat(result, url, expect=None, expect_regex=None, prompt=None):
    """Return ``(answer, completion_tokens)`` or raise VllmNotReady.

    ``expect`` / ``expect_regex`` / ``prompt`` are as for ``answer_problem``.
    """
    path = "/v1/chat/completions"
    require_answer(result, url, path)
    try:
        answer, tokens = parse_chat_completion(result.json())
    except ValueError as exc:
        raise VllmNotReady(f"POST {join_url(url, path)}: {exc}") from None
    problem = answer_problem(answer, expect, expect_regex, prompt)
    if problem:
        raise VllmNotReady(f"{problem} (from {url})", answer=answer, problem=problem)
    return answer, tokens


# --- rehearsal: a server with random weights (load_format dummy) ------------------------------------
#
# Random weights answer noise, so the answer's text is never judged; the check proves that the engine
# schedules a request and generates tokens.  It uses /v1/completions (no chat template is needed) and,
# when the server skips the tokenizer (skip_tokenizer_init), a prompt of token ids: vLLM's CompletionRequest
# takes ``prompt`` as a list of token ids, and ``return_token_ids`` adds ``token_ids`` to each choice
# (vllm/entrypoints/openai/completion/protocol.py, CompletionRequest; completion/serving.py,
# request_output_to_completion_response).  Without a tokenizer nothing is detokenized, so ``text`` is
# empty (vLLM's tests/engine/test_skip_tokenizer_init.py: text == "" and token_ids set).


def completion_payload(model, prompt, max_tokens, prompt_token_ids=None):
    """Greedy completion request of a rehearsal: token ids when given, else the text prompt.

    ``ignore_eos`` makes random weights generate ``max_tokens`` tokens instead of stopping on an early
    end-of-sequence token, so the token count and rate mean something.
    """
    return {
        "model": model,
        "prompt": list(prompt_token_ids) if prompt_token_ids else prompt,
        "max_tokens": max_tokens,
        "temperature": 0,
        "ignore_eos": True,
        "return_token_ids": True,
        "stream": False,
    }


def parse_completion(document):
    """Return ``(text, token_ids, completion_tokens)`` from an OpenAI ``text_completion`` document.

    ``token_ids`` is None when the server did not send them (a vLLM before ``return_token_ids``);
    ``completion_tokens`` comes from ``usage``, else from the token ids.
    """
    try:
        choice = document["choices"][0]
    except (KeyError, IndexError, TypeError):
        raise ValueError("no choices[0] in the completion answer") from None
    if not isinstance(choice, dict):
        raise ValueError("choices[0] of the completion answer is not an object")
    token_ids = choice.get("token_ids")
    token_ids = [t for t in token_ids if isinstance(t, int)] if isinstance(token_ids, list) else None
    tokens = (document.get("usage") or {}).get("completion_tokens")
    if not isinstance(tokens, int):
        tokens = len(token_ids) if token_ids is not None else None
    return choice.get("text") or "", token_ids, tokens


def check_completion(result, url):
    """Return ``(text, token_ids, completion_tokens)`` of a rehearsal's completion, or raise VllmNotReady.

    The text is not judged (random weights); the answer must carry at least one generated token.
    """
    path = "/v1/completions"
    require_answer(result, url, path)
    try:
        text, token_ids, tokens = parse_completion(result.json())
    except ValueError as exc:
        raise VllmNotReady(f"POST {join_url(url, path)}: {exc}") from None
    if not tokens:
        raise VllmNotReady(f"POST {join_url(url, path)} generated no tokens: {result.describe()}")
    return text, token_ids, tokens
