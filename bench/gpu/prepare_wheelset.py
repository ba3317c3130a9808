"""Prepare vLLM and the packages the GPU machine lacks as xz archives that travel there in parts.

    python bench/gpu/prepare_wheelset.py --out DIR [--cache DIR] [--part-mib 56]
    python bench/gpu/prepare_wheelset.py --pin      # rewrite wheelset.txt's hashes from PyPI

The GPU machine has no network, its own Python 3.12 and PyTorch 2.11.0+cu130 (the torch vLLM 0.22.0 pins),
and takes at most 64 MiB of files per call. So every wheel of `bench/gpu/wheelset.txt` (pinned by version and
sha256, checked by pip) is installed here with `--no-deps --target` for that Python and platform, the parts
no run of ours loads are removed (PRUNE says why, each behind a guarded import in vLLM), and the tree is
packed as two archives: `core` (every dense, pooling and quantized dense start) and `moe` (the fused-MoE
extension), `core` cut into parts. `manifest.json` gives every part's and
archive's sha256; `python3 -m harness.unpack` joins, checks and extracts them there.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import subprocess
import sys
import tarfile
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
WHEELSET = HERE / "wheelset.txt"
PYTHON_VERSION = "3.12"  # the GPU machine's python3
# pip matches a platform tag exactly: every manylinux tag the pinned wheels carry, up to the machine's glibc
PLATFORMS = (
    "manylinux_2_35_x86_64",
    "manylinux_2_34_x86_64",
    "manylinux_2_31_x86_64",
    "manylinux_2_28_x86_64",
    "manylinux_2_27_x86_64",
    "manylinux_2_26_x86_64",
    "manylinux_2_24_x86_64",
    "manylinux_2_17_x86_64",
    "manylinux2014_x86_64",
    "manylinux_2_5_x86_64",
    "manylinux1_x86_64",
)
MIB = 1024**2
PIP = ["python3", "-m", "pip"]  # any interpreter with pip: it only fetches and unpacks wheels

# Removed before packing, each with why no run of ours loads it (paths in vLLM 0.22.0's wheel).
PRUNE: dict[str, str] = {
    "vllm/vllm_flash_attn/_vllm_fa2_C.abi3.so": "FlashAttention 2: imported in a try block "
    "(vllm_flash_attn/flash_attn_interface.py); on compute capability 9.x get_flash_attn_version picks FA3",
    "vllm/vllm-rs": "the Rust frontend binary, used only with VLLM_RUST_FRONTEND_PATH (vllm/envs.py)",
    "vllm/third_party/deep_gemm": "DeepGEMM: has_deep_gemm() (vllm/utils/import_utils.py) reports it absent "
    "and FP8 block GEMMs take CUTLASS or Triton instead; unquantized models never call it",
    "vllm/_flashmla_C.abi3.so": "FlashMLA: MLA models only, imported in a try block (v1/attention/ops/flashmla.py)",
    "vllm/_flashmla_extension_C.abi3.so": "FlashMLA's sparse extension: as above",
    "xgrammar/lib/libxgrammar.a": "a static library for building against xgrammar; Python loads the .so",
    "mistral_common/data": "Tekken vocabularies of Mistral's tokenizers; our models use their own tokenizer",
    "bin": "console scripts whose first line names this machine's interpreter; the runner calls modules",
}
# Shared objects whose symbol tables dwarf their code (xgrammar's: 53 MB, 2 MB stripped); vLLM's own
# extensions travel as built.
STRIP = ("xgrammar/libxgrammar_bindings.so",)
# The `moe` archive: what only MoE starts load; everything else is `core`. vLLM imports `_moe_C` where it is
# present and goes on without it (vllm 0.22.0 platforms/interface.py::Platform.import_kernels:
# contextlib.suppress(ImportError)); the humming kernels (and pyelftools, which they need) stay in `core`,
# because every quantized checkpoint imports them (model_executor/layers/quantization/__init__.py imports
# every method's config, humming.py imports `humming` on CUDA), so a dense FP8 start needs no `moe` part.
MOE_MEMBERS = ("vllm/_moe_C.abi3.so",)


@dataclass(frozen=True)
class Pin:
    name: str
    version: str
    hashes: tuple[str, ...]

    def requirement(self) -> str:
        return f"{self.name}=={self.version}" + "".join(f" --hash=sha256:{h}" for h in self.hashes)


_PIN = re.compile(r"^([A-Za-z0-9_.-]+)==([^\s\\]+)")
_HASH = re.compile(r"--hash=sha256:([0-9a-f]{64})")


def parse_wheelset(text: str) -> list[Pin]:
    """name==version lines (with `\\` continuations), each with its --hash options; comments ignored."""
    joined = re.sub(r"\\\n", " ", text)
    pins = []
    for raw in joined.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        match = _PIN.match(line)
        if match is None:
            raise ValueError(f"not a pinned requirement: {line!r}")
        pins.append(Pin(match.group(1), match.group(2), tuple(_HASH.findall(line))))
    names = [p.name.lower().replace("_", "-") for p in pins]
    if len(set(names)) != len(names):
        raise ValueError("a package is pinned twice")
    return pins


def _platform_args() -> list[str]:
    args = ["--only-binary=:all:", "--python-version", PYTHON_VERSION, "--implementation", "cp"]
    for platform in PLATFORMS:
        args += ["--platform", platform]
    return args


def download(wheelset: Path, cache: Path) -> None:
    """Every pinned wheel into `cache`; pip refuses a file whose sha256 is not pinned."""
    subprocess.run(
        [
            *PIP,
            "download",
            "--no-deps",
            "--require-hashes",
            "-q",
            "-d",
            str(cache),
            "-r",
            str(wheelset),
            *_platform_args(),
        ],
        check=True,
    )


def install_tree(wheelset: Path, cache: Path, tree: Path) -> None:
    if tree.exists():
        shutil.rmtree(tree)
    subprocess.run(
        [
            *PIP,
            "install",
            "--no-deps",
            "--no-index",
            "--no-compile",
            "--require-hashes",
            "-q",
            "--find-links",
            str(cache),
            "--target",
            str(tree),
            "-r",
            str(wheelset),
            *_platform_args(),
        ],
        check=True,
    )


def prune(tree: Path) -> list[dict[str, object]]:
    removed: list[dict[str, object]] = []
    for relative, why in PRUNE.items():
        path = tree / relative
        if not path.exists():
            continue
        size = (
            sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
            if path.is_dir()
            else path.stat().st_size
        )
        shutil.rmtree(path) if path.is_dir() else path.unlink()
        removed.append({"path": relative, "bytes": size, "why": why})
    for relative in STRIP:
        path = tree / relative
        before = path.stat().st_size
        subprocess.run(["strip", "--strip-unneeded", str(path)], check=True)
        removed.append({"path": relative, "bytes": before - path.stat().st_size, "why": "symbols stripped"})
    for cache_dir in tree.rglob("__pycache__"):
        shutil.rmtree(cache_dir)
    return removed


def members(tree: Path) -> tuple[list[str], list[str]]:
    """(core, moe): every file of the tree, relative, sorted, in exactly one archive."""
    files = sorted(str(p.relative_to(tree)) for p in tree.rglob("*") if p.is_file() or p.is_symlink())
    moe = [f for f in files if f.startswith(MOE_MEMBERS)]
    return [f for f in files if not f.startswith(MOE_MEMBERS)], moe


def write_archive(tree: Path, names: Iterable[str], path: Path) -> None:
    """An xz tar (xz's own multi-threaded encoder; Python's lzma reads it on the GPU machine)."""
    plain = path.with_suffix("")
    with tarfile.open(plain, "w", format=tarfile.PAX_FORMAT) as tar:
        for name in names:
            tar.add(tree / name, arcname=name, recursive=False)
    subprocess.run(["xz", "-9", "-T2", "-f", str(plain)], check=True)


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(MIB), b""):
            digest.update(block)
    return digest.hexdigest()


def split(archive: Path, part_bytes: int) -> list[Path]:
    """Equal parts no larger than `part_bytes`: archive.000, archive.001, ..."""
    size = archive.stat().st_size
    count = -(-size // part_bytes)
    each = -(-size // count)
    parts = []
    with archive.open("rb") as f:
        for index in range(count):
            part = archive.with_name(f"{archive.name}.{index:03d}")
            part.write_bytes(f.read(each))
            parts.append(part)
    return parts


def prepare(out: Path, cache: Path, part_mib: int, wheelset: Path = WHEELSET) -> dict[str, object]:
    out.mkdir(parents=True, exist_ok=True)
    cache.mkdir(parents=True, exist_ok=True)
    download(wheelset, cache)
    tree = out / "tree"
    install_tree(wheelset, cache, tree)
    removed = prune(tree)
    core, moe = members(tree)
    archives: dict[str, object] = {}
    for name, files in (("core", core), ("moe", moe)):
        archive = out / f"{name}.tar.xz"
        write_archive(tree, files, archive)
        parts = split(archive, part_mib * MIB)
        archives[name] = {
            "file": archive.name,
            "sha256": sha256(archive),
            "bytes": archive.stat().st_size,
            "members": len(files),
            "parts": [{"file": p.name, "sha256": sha256(p), "bytes": p.stat().st_size} for p in parts],
        }
        archive.unlink()
    manifest: dict[str, object] = {
        "wheelset": [pin.requirement() for pin in parse_wheelset(wheelset.read_text())],
        "python": PYTHON_VERSION,
        "removed": removed,
        "archives": archives,
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def pypi_sha256(name: str, version: str, filename: str) -> str:
    """The sha256 PyPI's simple index (PEP 691 JSON) gives for one file of a release."""
    request = urllib.request.Request(
        f"https://pypi.org/simple/{name}/", headers={"Accept": "application/vnd.pypi.simple.v1+json"}
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        index = json.load(response)
    for entry in index["files"]:
        if entry["filename"] == filename:
            return str(entry["hashes"]["sha256"])
    raise LookupError(f"{name} {version}: PyPI lists no file {filename}")


def pin(wheelset: Path, cache: Path) -> None:
    """Rewrite `wheelset` with the sha256 of the wheel pip picks for the GPU machine, as PyPI states it."""
    pins = parse_wheelset(wheelset.read_text())
    unhashed = cache / "unhashed.txt"
    unhashed.write_text("".join(f"{p.name}=={p.version}\n" for p in pins))
    subprocess.run(
        [*PIP, "download", "--no-deps", "-q", "-d", str(cache), "-r", str(unhashed), *_platform_args()],
        check=True,
    )
    lines = []
    for p in pins:
        stem = re.sub(r"[-_.]+", "_", p.name).lower()
        (wheel,) = [f for f in cache.glob("*.whl") if f.name.lower().startswith(f"{stem}-{p.version}-")]
        published = pypi_sha256(p.name, p.version, wheel.name)
        if published != sha256(wheel):
            raise ValueError(f"{wheel.name}: downloaded sha256 differs from PyPI's {published}")
        lines.append(f"{p.name}=={p.version} --hash=sha256:{published}  # {wheel.name}\n")
    header = [line for line in wheelset.read_text().splitlines(keepends=True) if line.startswith("#")]
    wheelset.write_text("".join(header) + "".join(lines))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, help="where the parts and manifest.json go")
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "colo-gpu-wheels")
    parser.add_argument(
        "--part-mib", type=int, default=56, help="largest part (a call carries 64 MiB in all)"
    )
    parser.add_argument("--wheelset", type=Path, default=WHEELSET)
    parser.add_argument("--pin", action="store_true", help="rewrite the wheel set's hashes from PyPI")
    parser.add_argument("--pip-python", default=PIP[0], help="the interpreter whose pip to use (python3)")
    args = parser.parse_args(argv)
    PIP[0] = args.pip_python
    if args.pin:
        args.cache.mkdir(parents=True, exist_ok=True)
        pin(args.wheelset, args.cache)
        return 0
    if args.out is None:
        parser.error("--out is required unless --pin")
    manifest = prepare(args.out, args.cache, args.part_mib, args.wheelset)
    print(json.dumps({k: v for k, v in manifest.items() if k != "wheelset"}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
