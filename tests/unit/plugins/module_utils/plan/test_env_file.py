"""env_file.parse reads an environment file as systemd's EnvironmentFile= and the role's launcher do (the launcher is
run on the same text in tests/unit/roles/test_vllm_launcher.py)."""

import pytest

from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import env_file


@pytest.mark.parametrize("text, expected", [
    ("A=1\nB=2\n", {"A": "1", "B": "2"}),
    ("# c\n; c\n\n   \nA=1", {"A": "1"}),
    ("  FOO = \"override\"  \n", {"FOO": "override"}),
    ("A='a b'\n", {"A": "a b"}),
    ('A="x \\"y\\" \\\\ \\$HOME \\`id\\`"\n', {"A": 'x "y" \\ $HOME `id`'}),
    ("A='\n", {"A": "'"}),
    ("A=\"\n", {"A": '"'}),
    ("A=1\nA=2\n", {"A": "2"}),
    ("export BAR=1\n9X=1\nA-B=1\nnoequals\n=1\n", {}),
    ("A=b=c\n", {"A": "b=c"}),
    ("A=\n", {"A": ""}),
    ("A=$(id)\n", {"A": "$(id)"}),
    ("", {}),
])
def test_parse(text, expected):
    assert env_file.parse(text) == expected


@pytest.mark.parametrize("text, expected", [
    # review round 3: str.splitlines broke "KEY\v=value" in two and saw nothing; the launcher's read sees KEY
    ("KUNPENG_VLLM_METRICS_SOURCES\v=0.0.0.0/0\n", {"KUNPENG_VLLM_METRICS_SOURCES": "0.0.0.0/0"}),
    ("PYTHONPATH\f=/tmp/evil\n", {"PYTHONPATH": "/tmp/evil"}),
    ("A=1\r\nB=2\r\n", {"A": "1", "B": "2"}),
])
def test_lines_end_at_newlines_only(text, expected):
    assert env_file.parse(text) == expected


def test_a_file_with_a_control_character_is_refused():
    from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import input_check
    problems = input_check.environment_file_problems({"/etc/vllm/extra.env": "A=1\nB\x1b=2\n"})
    assert problems and "/etc/vllm/extra.env holds a control character" in problems[0]
    assert input_check.environment_file_problems({"/etc/vllm/extra.env": "A=1\r\nB=\t2\n"}) == []
    refused = input_check.environment_file_problems({"/etc/vllm/extra.env": "PYTHONPATH\v=/tmp/evil\n"})
    assert refused, "a vertical tab hid PYTHONPATH from the check"


def test_a_lone_carriage_return_is_refused():
    """Review round 7: systemd's EnvironmentFile= ends a line at a lone \\r ("TZ=UTC\\rVLLM_API_KEY=x" is two
    variables there) where a newline-only reading saw one harmless value."""
    from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import input_check
    for text in ("TZ=UTC\rVLLM_API_KEY=known-to-the-author-0123\n", "TZ=UTC\rPYTHONPATH=/srv/evil\n"):
        assert env_file.control_characters(text)
        assert input_check.environment_file_problems({"/etc/vllm/extra.env": text})
    # as systemd reads it, the variable hidden behind the carriage return is seen
    assert env_file.parse("TZ=UTC\rPYTHONPATH=/srv/evil\n") == {"TZ": "UTC", "PYTHONPATH": "/srv/evil"}
    # Windows line ends are line ends
    assert not env_file.control_characters("A=1\r\nB=2\r\n")


@pytest.mark.parametrize("text", [
    # review round 8: systemd joins a line ending in a backslash (comment or value) and reads a quote past its line,
    # so an earlier refused value was the one it loaded while the check saw a harmless repeat
    "FORWARDED_ALLOW_IPS=*\n# the proxy, below \\\nFORWARDED_ALLOW_IPS=10.0.0.5\n",
    "LD_PRELOAD=/tmp/evil.so\n# allocator \\\nLD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2\n",
    'FORWARDED_ALLOW_IPS=0.0.0.0/0\nNOTE="see\nFORWARDED_ALLOW_IPS=10.0.0.5\n"\n',
    "KUNPENG_VLLM_METRICS_LOOPBACK=bogus\nX=a\\\nKUNPENG_VLLM_METRICS_LOOPBACK=on\n",
    # and without a continuation, every assignment is checked, not only the last
    "FORWARDED_ALLOW_IPS=*\nFORWARDED_ALLOW_IPS=10.0.0.5\n",
])
def test_a_file_systemd_reads_otherwise_than_the_check_is_refused(text):
    from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import input_check
    assert input_check.environment_file_problems({"/etc/vllm/extra.env": text})


def test_plain_files_still_pass():
    from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import input_check
    text = 'NCCL_SOCKET_IFNAME=eth1\n# a comment\nHCCL_BUFFSIZE="512"\nGLOO_SOCKET_IFNAME=\'eth1\'\n'
    assert input_check.environment_file_problems({"/etc/vllm/extra.env": text}) == []
    assert env_file.assignments("A=1\nA=2\n") == [("A", "1"), ("A", "2")] and env_file.parse("A=1\nA=2\n") == {"A": "2"}


@pytest.mark.parametrize("text, lines", [
    ('A="x\\"\nB=1\n', [1]),
    # review round 9: systemd drops an unquoted backslash and joins adjacent quoted pieces (".\." and ".''." are
    # ".." to it), and reads a quote reopened after a closed one across the line end
    ("LD_PRELOAD=/usr/lib/.\\./.\\./tmp/evil.so\n", [1]),
    ("LD_PRELOAD='/usr/lib/.''./.''./tmp/evil.so'\n", [1]),
    ('LD_PRELOAD="/usr/lib/."".""/tmp/evil.so"\n', [1]),
    ('LD_PRELOAD="/usr/lib/x86_64-linux-gnu/libjemalloc.so.2" "\n /tmp/evil.so"\n', [1]),
    # review round 10: a no-break space is stripped by this check, kept by systemd
    ("LD_PRELOAD=\xa0/usr/lib/x86_64-linux-gnu/libjemalloc.so.2\n", [1]),
    # the subset both read alike
    ("A=1\nB='two words'\nC=\"three\"\n# a comment\n", []),
])
def test_values_systemd_reads_otherwise_are_found(text, lines):
    from ansible_collections.kunpeng.vllm.plugins.module_utils.plan import input_check
    assert env_file.ambiguous_lines(text) == lines
    assert bool(input_check.environment_file_problems({"/etc/vllm/extra.env": text})) is bool(lines)
