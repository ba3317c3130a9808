"""A checkpoint's architecture from its files: a config.json (file or model directory) on disk, or one already read."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from colo.files import MIB, decode_utf8, read_bounded
from colo.vllm.checkpoint.architecture import ArchitectureError, ModelArchitecture
from colo.vllm.checkpoint.hf_config import from_hf_config
from colo.vllm.checkpoint.pooling import read_declared_pooling
from colo.vllm.checkpoint.safetensors import read_index, read_local_headers, tensor_bytes_by_part

MAX_CONFIG_BYTES = 4 * MIB  # config.json files of real checkpoints are tens of kilobytes
# Files vLLM reads beside config.json where a checkpoint has them, each for a figure of the budget.
SIDE_FILES = (
    "hf_quant_config.json",  # ModelOpt checkpoints' quantization block
    "quantize_config.json",  # older GPTQ/AWQ checkpoints' quantization block
    "sentence_bert_config.json",  # a sentence-transformers model's max_seq_length caps the context
    "preprocessor_config.json",  # a vision model's largest image, which vLLM profiles the encoder with
    # a Qwen3-VL video processor's size.longest_edge: the dummy video vLLM profiles the encoder with (vllm 0.22.0
    # models/qwen3_vl.py::Qwen3VLProcessingInfo.get_max_video_tokens reads get_video_processor().size, which
    # transformers loads from this file: video_processing_utils.py::BaseVideoProcessor.get_video_processor_dict)
    "video_preprocessor_config.json",
)


def from_config(
    raw: Any, model_id: str, source: str, side_files: Mapping[str, Mapping[str, Any]] | None = None
) -> ModelArchitecture:
    """from_hf_config on a mapping read from a user's file: a value of the wrong shape (a string where a
    number or an object belongs, zero heads) is an ArchitectureError naming the file, not a crash."""
    if not isinstance(raw, Mapping):
        raise ArchitectureError(f"{source} does not hold a JSON object")
    try:
        return from_hf_config(raw, model_id, source=source, side_files=side_files)
    except (TypeError, AttributeError, KeyError, IndexError, ZeroDivisionError, OverflowError) as exc:
        raise ArchitectureError(
            f"{source} is not shaped like a Hugging Face config.json ({type(exc).__name__}: {str(exc)[:80]})"
        ) from None


def parse_config_json(data: bytes) -> Any:
    """The JSON value of a config.json's bytes (at most MAX_CONFIG_BYTES); ValueError when it is not JSON."""
    if len(data) > MAX_CONFIG_BYTES:
        raise ValueError(f"larger than {MAX_CONFIG_BYTES // MIB} MiB, which no config.json is")
    try:
        return json.loads(decode_utf8(data))
    except RecursionError:
        raise ValueError("nested too deeply to be a config.json") from None


def with_total_size(arch: ModelArchitecture, total: int) -> ModelArchitecture:
    """Exact tensor bytes from an index's total_size: the untied lm_head (kept in the model dtype by every method
    colo sizes) is its own part because embedding servers do not load it; any MTP layers are inside `model`,
    and the estimate takes their geometry out when they are not loaded."""
    lm_head = 0 if arch.tie_word_embeddings else arch.vocab_size * arch.hidden_size * arch.dtype_bytes
    parts = {"model": total - lm_head, "lm_head": lm_head}
    return replace(arch, checkpoint_bytes=total, checkpoint_bytes_by_part=parts)


def with_tensor_bytes(arch: ModelArchitecture, parts: Mapping[str, int]) -> ModelArchitecture:
    """Exact tensor bytes by part, summed from safetensors headers."""
    return replace(arch, checkpoint_bytes=sum(parts.values()), checkpoint_bytes_by_part=dict(parts))


def read_side_files(has: Callable[[str], bool], read: Callable[[str], Any]) -> dict[str, Any]:
    """The SIDE_FILES a checkpoint has, parsed: `has` says whether one exists beside config.json, `read` parses it
    as JSON. Every source (a model directory, the Hub, an S3 prefix) reads them through this, so the same files
    give the same architecture wherever they lie."""
    return {name: read(name) for name in SIDE_FILES if has(name)}


def _local_has(directory: Path) -> Callable[[str], bool]:
    return lambda name: (directory / name).is_file()


def _local_read(directory: Path) -> Callable[[str], Any]:
    return lambda name: parse_config_json(read_bounded(directory / name, MAX_CONFIG_BYTES))


def with_declared_pooling(
    arch: ModelArchitecture, pooling: tuple[str, ...] | None, mode_string: tuple[str, ...] | None = None
) -> ModelArchitecture:
    """The architecture with the pooling its sentence-transformers files declare (None: none), and as releases
    that read a string pooling_mode declare it where that differs (colo.vllm.checkpoint.pooling.DeclaredPooling)."""
    if pooling is None and mode_string is None:
        return arch
    return replace(arch, declared_pooling=pooling, declared_pooling_mode_string=mode_string)


def from_checkpoint_files(
    raw: Any, model_id: str, source: str, has: Callable[[str], bool], read: Callable[[str], Any]
) -> ModelArchitecture:
    """from_config on config.json's mapping with the files beside it that `has` lists and `read` parses: the
    SIDE_FILES, then the sentence-transformers pooling. A model directory, the Hub and an S3 prefix each build
    their architecture through this."""
    arch = from_config(raw, model_id, source, read_side_files(has, read))
    return with_declared_pooling(arch, *read_declared_pooling(has, read))


def architecture_from_path(path: Path, model_id: str) -> ModelArchitecture:
    """A config.json file, or a model directory holding config.json (and *.safetensors for exact bytes); the
    sentence-transformers files beside it (modules.json, the Pooling module's config.json) give its pooling."""
    config_file = path / "config.json" if path.is_dir() else path
    raw = parse_config_json(read_bounded(config_file, MAX_CONFIG_BYTES))
    arch = from_checkpoint_files(
        raw, model_id, str(config_file), _local_has(config_file.parent), _local_read(config_file.parent)
    )
    if not path.is_dir():
        return arch
    headers = read_local_headers(path)
    if headers:
        return with_tensor_bytes(arch, tensor_bytes(headers, arch.num_layers, str(path)))
    index = read_index(path)  # configs downloaded without the weights: the index still gives the exact total
    return with_total_size(arch, int(index["metadata"]["total_size"])) if index else arch


def tensor_bytes(headers: list[dict[str, Any]], layers: int, source: str) -> dict[str, int]:
    """Tensor bytes by part from safetensors headers; a header without byte offsets names its source."""
    try:
        return tensor_bytes_by_part(headers, layers)
    except (TypeError, KeyError, ValueError) as exc:
        raise ArchitectureError(
            f"a safetensors header in {source} lists a tensor without byte offsets"
        ) from exc


def architecture_from_mapping(
    raw: Mapping[str, Any],
    model_id: str,
    source: str,
    parts: Mapping[str, int] | None = None,
    *,
    has: Callable[[str], bool] | None = None,
    read: Callable[[str], Any] | None = None,
) -> ModelArchitecture:
    """A config.json already read (from S3, say), with tensor bytes by part when headers were read. Where `has` and
    `read` reach the files beside it (`has` says whether one exists, `read` parses it as JSON; names are relative
    to the model's root), they are read as a model directory's are: the SIDE_FILES (quantization blocks,
    sentence_bert_config.json, preprocessor_config.json, video_preprocessor_config.json) and the sentence-transformers
    pooling."""
    if has is None or read is None:
        arch = from_config(raw, model_id, source=source)
    else:
        arch = from_checkpoint_files(raw, model_id, source, has, read)
    return with_tensor_bytes(arch, parts) if parts else arch
