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
