"""The store: atomic writes survive SIGKILL, corrupt files are loud, hashes are stable."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codeloop import store
from codeloop.errors import IntegrityError

KILL_BETWEEN_WRITE_AND_RENAME = textwrap.dedent(
    """
    import os, sys, time
    from codeloop import store

    target, marker = sys.argv[1], sys.argv[2]

    def stalled_replace(source, destination):
        # The temp file is written and fsynced; announce it and wait to be killed.
        open(marker, "w").close()
        time.sleep(60)

    os.replace = stalled_replace
    store.write_json(target, {"version": "new", "payload": "x" * 1_000_000})
    """
)


def test_write_killed_before_rename_keeps_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "phase.json"
    marker = tmp_path / "written"
    store.write_json(target, {"version": "old"})
    child = subprocess.Popen(
        [sys.executable, "-c", KILL_BETWEEN_WRITE_AND_RENAME, str(target), str(marker)]
    )
    try:
        deadline = time.monotonic() + 30
        while not marker.exists():
            assert child.poll() is None, "the writer exited before reaching the rename"
            assert time.monotonic() < deadline, "the writer never reached the rename"
            time.sleep(0.01)
        child.send_signal(signal.SIGKILL)
        assert child.wait(timeout=10) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
    assert store.read(target) == {"schema_version": store.SCHEMA_VERSION, "version": "old"}
    leftovers = [path for path in tmp_path.iterdir() if path.name.endswith(".tmp")]
    assert len(leftovers) == 1, "the new content was fully written to a temp file"
    assert json.loads(leftovers[0].read_text())["version"] == "new"
    # A later write still works and replaces the old file.
    store.write_json(target, {"version": "newer"})
    assert store.read(target)["version"] == "newer"


def test_write_json_adds_schema_version_and_refuses_non_objects(tmp_path: Path) -> None:
    path = store.write_json(tmp_path / "a" / "b.json", {"rows": [1, 2]})
    assert store.read(path) == {"schema_version": store.SCHEMA_VERSION, "rows": [1, 2]}
    with pytest.raises(TypeError, match="must be a JSON object"):
        store.write_json(tmp_path / "c.json", [1, 2])  # type: ignore[arg-type]
    assert not (tmp_path / "c.json").exists()


def test_failed_write_leaves_no_temp_file(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        store.write_json(tmp_path / "nan.json", {"value": float("nan")})
    assert list(tmp_path.iterdir()) == []


def test_read_missing_returns_default_or_names_the_file(tmp_path: Path) -> None:
    missing = tmp_path / "absent.json"
    assert store.read(missing, {"rows": []}) == {"rows": []}
    assert store.read(missing, None) is None
    with pytest.raises(IntegrityError, match=r"absent\.json.*missing"):
        store.read(missing)


@pytest.mark.parametrize("content", [b'{"rows": [1, 2', b"", b"\xff\xfe{}"])
def test_corrupt_json_is_a_clear_error_and_is_never_replaced(
    tmp_path: Path, content: bytes
) -> None:
    path = tmp_path / "collect-rows.json"
    path.write_bytes(content)
    with pytest.raises(IntegrityError) as raised:
        store.read(path, default={"rows": []})
    message = str(raised.value)
    assert str(path) in message
    assert "corrupt" in message
    assert path.read_bytes() == content


def test_sha256_file_streams_large_files(tmp_path: Path) -> None:
    data = os.urandom(3 * (1 << 20) + 17)
    path = tmp_path / "weights.bin"
    path.write_bytes(data)
    assert store.sha256_file(path) == hashlib.sha256(data).hexdigest()


def _build(folder: Path, files: dict[str, bytes], order: list[str]) -> None:
    for name in order:
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(files[name])


file_trees = st.dictionaries(
    keys=st.lists(st.sampled_from(["a", "b", "c", "d.json", "e.bin"]), min_size=1, max_size=3).map(
        lambda parts: "/".join([*parts[:-1], parts[-1] + ".f"])
    ),
    values=st.binary(max_size=64),
    min_size=1,
    max_size=8,
)


@settings(max_examples=40, deadline=None)
@given(files=file_trees, data=st.data())
def test_tree_hash_ignores_creation_order(tmp_path_factory, files, data) -> None:
    names = sorted(files)
    first = tmp_path_factory.mktemp("first")
    second = tmp_path_factory.mktemp("second")
    _build(first, files, names)
    _build(second, files, data.draw(st.permutations(names)))
    (second / "empty-folder").mkdir()
    assert store.sha256_tree(first) == store.sha256_tree(second)


def test_tree_hash_changes_with_one_byte_a_rename_or_a_new_file(tmp_path: Path) -> None:
    files = {"adapter/adapter_model.safetensors": b"\x00" * 4096, "adapter/config.json": b"{}"}
    _build(tmp_path, files, sorted(files))
    original = store.sha256_tree(tmp_path)

    weights = tmp_path / "adapter/adapter_model.safetensors"
    weights.write_bytes(b"\x00" * 4095 + b"\x01")
    assert store.sha256_tree(tmp_path) != original
    weights.write_bytes(b"\x00" * 4096)
    assert store.sha256_tree(tmp_path) == original

    (tmp_path / "adapter/config.json").rename(tmp_path / "adapter/config2.json")
    assert store.sha256_tree(tmp_path) != original
    (tmp_path / "adapter/config2.json").rename(tmp_path / "adapter/config.json")

    (tmp_path / "adapter/checkpoint-5").mkdir()
    (tmp_path / "adapter/checkpoint-5/state.bin").write_bytes(b"x")
    assert store.sha256_tree(tmp_path) != original
    skip_checkpoints = lambda relative: "checkpoint-" in str(relative)  # noqa: E731
    assert store.sha256_tree(tmp_path, ignore=skip_checkpoints) == original


def test_tree_hash_refuses_a_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(IntegrityError, match="nowhere"):
        store.sha256_tree(tmp_path / "nowhere")


def test_sha256_json_is_canonical() -> None:
    assert store.sha256_json({"b": 1, "a": [1, 2]}) == store.sha256_json({"a": [1, 2], "b": 1})
    assert store.sha256_json({"a": 1}) != store.sha256_json({"a": 2})


def test_progress_heartbeat(tmp_path: Path) -> None:
    assert store.read_progress(tmp_path) is None
    before = time.time()
    store.write_progress(tmp_path, "collect", 3, 16, task="t-1", language="go")
    progress = store.read_progress(tmp_path)
    assert progress is not None
    assert (progress["phase"], progress["completed"], progress["total"]) == ("collect", 3, 16)
    assert (progress["task"], progress["language"]) == ("t-1", "go")
    assert before <= progress["heartbeat_at"] <= time.time()
    assert 0 <= store.heartbeat_age(progress) < 60
    assert store.heartbeat_age(progress, now=progress["heartbeat_at"] + 90) == pytest.approx(90)
    with pytest.raises(ValueError, match="heartbeat_at"):
        store.write_progress(tmp_path, "collect", heartbeat_at=0)


def test_session_paths(tmp_path: Path) -> None:
    assert store.round_name(1) == "round-000001"
    assert store.batch_name(42) == "batch-000042"
    for wrong in (0, -1, 1_000_000):
        with pytest.raises(ValueError, match="round number"):
            store.round_name(wrong)
    session = store.SessionPaths(tmp_path)
    assert session.rounds() == [] and session.batches() == []
    for number in (3, 1, 12):
        session.round(number).mkdir(parents=True)
    session.batch(2).mkdir(parents=True)
    (tmp_path / "round-000007").touch()  # a file, not a round
    (tmp_path / "round-7").mkdir()  # not six digits
    assert session.rounds() == [1, 3, 12]
    assert session.batches() == [2]
    assert session.round(3) == tmp_path / "round-000003"
    assert session.batch(2) == tmp_path / "pool" / "batch-000002"
    assert session.config.name == "config.toml" and session.status.name == "status.json"
