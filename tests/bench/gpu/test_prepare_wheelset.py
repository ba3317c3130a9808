"""The wheel set is pinned by version and sha256, and what travels is split into the right archives."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.gpu.prepare_wheelset import PRUNE, WHEELSET, members, parse_wheelset, prune


def test_every_pin_of_the_shipped_wheel_set_has_a_version_and_a_sha256() -> None:
    pins = parse_wheelset(WHEELSET.read_text())
    assert {"vllm", "pydantic", "xgrammar", "humming-kernels"} <= {p.name for p in pins}
    assert all(len(p.hashes) == 1 and len(p.hashes[0]) == 64 for p in pins)
    (vllm,) = [p for p in pins if p.name == "vllm"]
    assert vllm.version == "0.22.0"


def test_a_wheel_set_line_without_an_exact_version_is_refused() -> None:
    with pytest.raises(ValueError, match="not a pinned requirement"):
        parse_wheelset("vllm>=0.22\n")


def test_a_package_pinned_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="twice"):
        parse_wheelset("pyzmq==27.1.0\nPyZMQ==27.1.0\n")


def test_continuation_lines_and_comments_are_read_as_pip_reads_them() -> None:
    (pin,) = parse_wheelset("# the set\nblake3==1.0.8 \\\n    --hash=sha256:" + "a" * 64 + "  # wheel\n")
    assert (pin.name, pin.version, pin.hashes) == ("blake3", "1.0.8", ("a" * 64,))


def _touch(tree: Path, *names: str) -> None:
    for name in names:
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_bytes(b"x")


def test_the_moe_archive_holds_only_the_fused_moe_extension(tmp_path: Path) -> None:
    _touch(
        tmp_path,
        "vllm/_C.abi3.so",
        "vllm/_moe_C.abi3.so",
        "humming/layer.py",
        "humming_kernels-0.1.2.dist-info/RECORD",
        "elftools/__init__.py",
        "pydantic/main.py",
    )
    core, moe = members(tmp_path)
    assert moe == ["vllm/_moe_C.abi3.so"]
    assert core == [  # a quantized dense checkpoint imports the humming kernels: they travel with core
        "elftools/__init__.py",
        "humming/layer.py",
        "humming_kernels-0.1.2.dist-info/RECORD",
        "pydantic/main.py",
        "vllm/_C.abi3.so",
    ]


def test_pruning_removes_only_what_it_names_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("bench.gpu.prepare_wheelset.STRIP", ())  # no xgrammar binary in this tree
    _touch(
        tmp_path,
        "vllm/vllm_flash_attn/_vllm_fa2_C.abi3.so",
        "vllm/vllm_flash_attn/_vllm_fa3_C.abi3.so",
        "vllm/third_party/deep_gemm/_C.so",
        "vllm/__pycache__/x.pyc",
    )
    removed = prune(tmp_path)
    assert {r["path"] for r in removed} == {
        "vllm/vllm_flash_attn/_vllm_fa2_C.abi3.so",
        "vllm/third_party/deep_gemm",
    }
    assert all(r["why"] == PRUNE[str(r["path"])] for r in removed)
    assert (tmp_path / "vllm/vllm_flash_attn/_vllm_fa3_C.abi3.so").exists()
    assert not (tmp_path / "vllm/__pycache__").exists()
