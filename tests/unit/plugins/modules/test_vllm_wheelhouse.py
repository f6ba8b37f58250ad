"""kunpeng.vllm.vllm_wheelhouse: pack on the controller, then state and unpack on the node; the second run with the
same wheelhouse changes nothing (the role's idempotence), a changed wheelhouse is unpacked again."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from module_runner import run_main  # noqa: E402

from ansible_collections.kunpeng.vllm.plugins.modules import vllm_wheelhouse  # noqa: E402


def _run(args, check_mode=False):
    return run_main(vllm_wheelhouse.main, args, check_mode=check_mode)


def _push(src, cache, node, check_mode=False):
    """What roles/vllm/tasks/wheelhouse_push.yml does: pack, read the marker, copy and unpack when not current."""
    failed, packed = _run({"action": "pack", "src": src, "cache_dir": cache})
    assert not failed, packed
    failed, state = _run({"action": "state", "dest": f"{node}/wheelhouse", "digest": packed["digest"]})
    assert not failed and not state["changed"]
    if state["current"]:
        return packed, state, None
    copy = f"{node}/{packed['name']}"
    with open(packed["archive"], "rb") as source, open(copy, "wb") as target:
        target.write(source.read())
    failed, unpacked = _run({"action": "unpack", "archive": copy, "dest": f"{node}/wheelhouse",
                             "digest": packed["digest"], "sha256": packed["sha256"]}, check_mode=check_mode)
    assert not failed, unpacked
    return packed, state, unpacked


def test_second_push_copies_nothing_and_a_new_wheel_is_pushed(tmp_path):
    src, cache, node = tmp_path / "wh", str(tmp_path / "cache"), tmp_path / "node"
    src.mkdir()
    node.mkdir()
    (src / "a-1.0-py3-none-any.whl").write_bytes(b"a" * 100)
    (src / "requirements.txt").write_text("a==1.0\n")
    packed, state, unpacked = _push(str(src), cache, str(node))
    assert packed["packed"] and not state["current"]
    assert unpacked["changed"] and unpacked["current"] and unpacked["files"] == 2
    assert not os.path.exists(f"{node}/{packed['name']}")  # the copy is removed once unpacked
    packed, state, unpacked = _push(str(src), cache, str(node))
    assert not packed["packed"] and not packed["changed"] and state["current"] and unpacked is None
    (src / "b-1.0-py3-none-any.whl").write_bytes(b"b")
    packed, state, unpacked = _push(str(src), cache, str(node))
    assert packed["packed"] and not state["current"] and unpacked["changed"]
    assert (node / "wheelhouse" / "b-1.0-py3-none-any.whl").read_bytes() == b"b"


def test_check_mode_unpacks_nothing(tmp_path):
    src, node = tmp_path / "wh", tmp_path / "node"
    src.mkdir()
    node.mkdir()
    (src / "a-1.0-py3-none-any.whl").write_bytes(b"a")
    _packed, _state, unpacked = _push(str(src), str(tmp_path / "cache"), str(node), check_mode=True)
    assert unpacked["changed"] and not (node / "wheelhouse").exists()


def test_state_without_a_wheelhouse_looks_up_uv_on_path():
    failed, state = _run({"action": "state"})
    assert not failed and state["current"] is False and isinstance(state["uv"], str)


def test_an_action_without_its_options_fails():
    failed, result = _run({"action": "unpack", "dest": "/opt/vllm/wheelhouse"})
    assert failed and "archive, digest, sha256" in result["msg"]
