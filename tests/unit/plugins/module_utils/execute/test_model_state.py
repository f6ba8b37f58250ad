"""A converged model copy is kept on cheap identities; any change on either side, or a request, syncs it."""

import json
import os

import pytest

from ansible_collections.kunpeng.vllm.plugins.module_utils.execute import install_state
from ansible_collections.kunpeng.vllm.plugins.module_utils.execute import model_state as ms

MODELS = os.path.join(os.path.dirname(os.path.dirname(__file__)), "..", "..", "fixtures", "models")


# The identities of real files: the committed model config fixtures.
SOURCE = ms.scan(MODELS, skip=())
FIRST = sorted(SOURCE)[0]
TARGET = {path: [size, 1764547200] for path, (size, _mtime) in SOURCE.items()}
STORED = ms.manifest(SOURCE, TARGET)


def _edited(files, path, size_delta=0, mtime_delta=0):
    changed = dict(files)
    size, mtime = changed[path]
    changed[path] = [size + size_delta, mtime + mtime_delta]
    return changed


def _without(files, path):
    return {key: value for key, value in files.items() if key != path}


@pytest.mark.parametrize("complete, source, stored, target, verify, action, says", [
    # No copy yet, or one an interrupted run left: staged.
    (False, SOURCE, None, {}, False, ms.STAGE, "staged"),
    (False, SOURCE, STORED, TARGET, True, ms.STAGE, "staged"),
    # A converged copy: nothing is read beyond the stat of each file.
    (True, SOURCE, STORED, TARGET, False, ms.KEEP, "nothing to copy"),
    # Asked for: checksums whatever the manifest says.
    (True, SOURCE, STORED, TARGET, True, ms.SYNC, "vllm_model_verify"),
    # A copy made before manifests existed, or an unreadable / foreign one.
    (True, SOURCE, None, TARGET, False, ms.SYNC, "no manifest"),
    (True, SOURCE, {"source": SOURCE, "target": TARGET}, TARGET, False, ms.SYNC, "no manifest"),
    (True, SOURCE, [], TARGET, False, ms.SYNC, "no manifest"),
    # The controller's model was replaced (size, or same size and new mtime), grew or lost a file.
    (True, _edited(SOURCE, FIRST, size_delta=1), STORED, TARGET, False, ms.SYNC, "controller changed"),
    (True, _edited(SOURCE, FIRST, mtime_delta=60), STORED, TARGET, False, ms.SYNC, "controller changed"),
    (True, dict(SOURCE, **{"extra.bin": [1, 1]}), STORED, TARGET, False, ms.SYNC, "extra.bin"),
    (True, _without(SOURCE, FIRST), STORED, TARGET, False, ms.SYNC, FIRST),
    # Someone edited or removed a file of the copy on the node.
    (True, SOURCE, STORED, _edited(TARGET, FIRST, mtime_delta=5), False, ms.SYNC, "node changed"),
    (True, SOURCE, STORED, _without(TARGET, FIRST), False, ms.SYNC, "node changed"),
])
def test_copy_action(complete, source, stored, target, verify, action, says):
    got, reason = ms.copy_action(complete, source, stored, target, verify)
    assert got == action, reason
    assert says.replace("controller changed", "on the controller changed").replace(
        "node changed", "on the node changed") in reason


def test_many_differences_are_counted_not_listed():
    changed = {path: [size + 1, mtime] for path, (size, mtime) in SOURCE.items()}
    changed.update({f"shard-{i}.safetensors": [1, 1] for i in range(5)})
    _action, reason = ms.copy_action(True, changed, STORED, TARGET)
    assert " more)" in reason


def test_scan_leaves_out_the_role_files_and_round_trips_through_json(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "w.bin").write_bytes(b"x" * 10)
    (tmp_path / "config.json").write_text("{}")
    (tmp_path / install_state.MODEL_MARKER).write_text("{}")
    (tmp_path / ms.MANIFEST).write_text("{}")
    os.symlink("config.json", str(tmp_path / "link.json"))
    files = ms.scan(str(tmp_path))
    assert sorted(files) == ["config.json", os.path.join("sub", "w.bin")]
    assert files[os.path.join("sub", "w.bin")][0] == 10
    assert ms.manifest_bytes(files) == 12
    stored = json.loads(json.dumps(ms.manifest(files, files)))
    assert ms.copy_action(True, files, stored, ms.scan(str(tmp_path)))[0] == ms.KEEP
    assert ms.scan(str(tmp_path / "absent")) == {}
