"""The multimodal encoder's share of vLLM's profile: which dummy inputs `profile_run` encodes, what the tower's
forward holds at its peak, and what stays alive through the text forward and the sampler.

`v1/worker/gpu_model_runner.py::profile_run` (0.22.0 - 0.33.0, read in 0.22.0, 0.25.0, 0.27.1, 0.29.0 and
0.33.0, unchanged) encodes, before the text forward, `mm_max_items_per_batch` maximum-size items of the
modality with the most tokens per item (`multimodal/encoder_budget.py::MultiModalBudget`):

    tokens per item   the processor's `get_mm_max_tokens_per_item(seq_len=max_model_len, one item each)`
    encoder budget    max(max_num_batched_tokens, the largest tokens per item)      (compute_mm_encoder_budget)
    items per prompt  max(1, min(limit_mm_per_prompt, max_model_len // tokens))
    items             max(1, min(budget // tokens, max_num_seqs x items per prompt)) (_get_max_items)

It runs all of them through the tower in one call (`embed_multimodal` on the batched dummy inputs), keeps the
batched pixel values (a local of profile_run) and the encoder outputs (`self.encoder_cache`) until the end of the
profile, and only then runs the text forward and the sampler. So the profile's peak is the larger of the
tower's own peak and the text peak plus what is kept.

Tokens per maximum-size item, by processor (vllm 0.22.0 model_executor/models):

* Qwen2-VL / Qwen2.5-VL (`qwen2_vl.py::Qwen2VLProcessingInfo`): an image is the factorisation of the
  processor's max_pixels into (patch x merge)-pixel units with the most tokens at an aspect ratio <= 200
  (`get_image_size_with_most_features`); a video is that image over as many frames as max_model_len tokens
  allow, at most 14 (`_MAX_FRAMES_PER_VIDEO`), frames padded to the temporal patch.
* Qwen3-VL / Qwen3.5 / 3.6 (`qwen3_vl.py::Qwen3VLProcessingInfo.get_max_video_tokens`): an image as above; a
  video is two frames of the video processor's longest_edge / temporal_patch_size pixels.
* Gemma 3 (`gemma3_mm.py`): a fixed `mm_tokens_per_image` per image of the tower's input size (no pan-and-scan,
  the processor's default).

The tower's forward, per patch, at its peak (vLLM's eager ViT blocks: `x = x + attn(norm1(x))`,
`x = x + mlp(norm2(x))`, every linear sharded over the tensor-parallel ranks, the residual whole): the residual
and the norm's output, then in the attention the qkv output, the rotated q/k copy and its contiguous input, the
attention output and the projection (`qwen2_5_vl.py::Qwen2_5_VisionAttention.forward` keeps them all as locals:
3H + 8H/tp), or in the MLP fc1's output and the activation (2H + 2I/tp; Qwen2.5-VL's gated MLP 2H + 3I/tp;
SigLIP's attention, whose q/k/v are views of qkv: 3H + 4H/tp). Beside them: the pixel values, Qwen3-VL's
learned position embeddings for every patch (`prepare_encoder_metadata`, alive through the blocks) and the
rotary cos/sin tables. Towers of other families are counted by what they keep only (their forward is not sized).
"""

from __future__ import annotations

from dataclasses import dataclass
from math import isqrt
from typing import Literal

from colo.vllm.checkpoint.architecture import ModelArchitecture, VisionGeometry
from colo.vllm.checkpoint.hf_config import GEMMA4_ARCHITECTURE

Family = Literal["qwen2_vl", "qwen2_5_vl", "qwen3_vl", "gemma3"]
FAMILIES: dict[str, Family] = {
    "Qwen2VLForConditionalGeneration": "qwen2_vl",
    "Qwen2_5_VLForConditionalGeneration": "qwen2_5_vl",
    "Qwen3VLForConditionalGeneration": "qwen3_vl",
    "Qwen3VLMoeForConditionalGeneration": "qwen3_vl",
    "Qwen3_5ForConditionalGeneration": "qwen3_vl",
    "Qwen3_5MoeForConditionalGeneration": "qwen3_vl",
    "Gemma3ForConditionalGeneration": "gemma3",
}
# The Hugging Face Qwen-VL image processors' default: at most 16,384 merged tokens per image
# (max_pixels 12,845,056 = 16384 x 28^2 for Qwen2/2.5-VL, size.longest_edge 16,777,216 = 16384 x 32^2 for
# Qwen3-VL); a checkpoint's preprocessor_config.json replaces it (VisionGeometry.max_pixels).
QWEN_VL_MAX_IMAGE_TOKENS = 16384
# Qwen3-VL's video processor default (Qwen3VLVideoProcessor size.longest_edge, 25,165,824 pixels over a
# frame pair: 12,288 merged tokens of 32 x 32 pixels each).
QWEN3_VL_VIDEO_MAX_PIXELS = 25_165_824
QWEN2_VL_MAX_FRAMES_PER_VIDEO = 14  # qwen2_vl.py::_MAX_FRAMES_PER_VIDEO
MAX_ASPECT = 200  # get_image_size_with_most_features: "avoid extreme aspect ratios (>200 for qwen2-vl)"
UNLIMITED_ITEMS = 999  # an unlisted modality's --limit-mm-per-prompt
GEMMA3_TOKENS_PER_IMAGE = 256  # Gemma3Config.mm_tokens_per_image default (transformers)
SIGLIP_IMAGE_SIZE = 896  # Gemma 3's checkpoints' vision_config.image_size
# Gemma 4 (vllm 0.19.1 - 0.34.0 models/gemma4_mm.py::Gemma4ProcessingInfo.get_mm_max_tokens_per_item): an image
# is vision_config.default_output_length soft tokens (Gemma4VisionConfig's default 280); a video 32 frames
# (_VIDEO_MAX_FRAMES) of 70 soft tokens (_VIDEO_MAX_SOFT_TOKENS) plus boi, eoi and ~6 timestamp tokens each.
GEMMA4_TOKENS_PER_IMAGE = 280
GEMMA4_VIDEO_TOKENS = 32 * (70 + 2 + 6)
# A checkpoint with an audio tower adds audio: the processor's audio_seq_length, the most soft tokens one audio
# item gives (transformers models/gemma4/processing_gemma4.py::Gemma4Processor.__init__, default 750: 30 s at
# 40 ms a token). A processor_config.json may set another; colo does not read that file.
GEMMA4_AUDIO_TOKENS = 750


@dataclass(frozen=True)
class MmItem:
    """One maximum-size item of a modality as the profile encodes it."""

    modality: str
    tokens: int  # embeddings the decoder receives
    patches: int  # the tower's input patches
    pixel_values: int  # pixel-value elements (model dtype)


@dataclass(frozen=True)
class EncoderProfile:
    """What the encoder part of `profile_run` holds (bytes), and on how many of which items."""

    item: MmItem | None
    items: int
    peak_bytes: int  # the tower's forward peak, the batch's pixel values included
    kept_bytes: int  # pixel values and encoder outputs alive through the text forward and the sampler
    sized: bool  # False: a tower family colo does not size (only what it keeps is counted, if anything)


def family_of(arch: ModelArchitecture) -> Family | None:
    return FAMILIES.get(arch.architecture)


def _most_features(max_pixels: int, unit: int) -> tuple[int, int]:
    """`get_image_size_with_most_features`: (height, width) in units, the largest unit count at most
    max_pixels / unit^2 whose closest factor pair has an aspect ratio <= 200."""
    for count in range(max(max_pixels // (unit * unit), 1), 0, -1):
        low = next(d for d in range(isqrt(count), 0, -1) if count % d == 0)
        if (count // low) / low <= MAX_ASPECT:
            return low, count // low
    return 1, 1


def _qwen_item(v: VisionGeometry, modality: str, *, units: int, frames: int) -> MmItem:
    merge, temporal = v.spatial_merge_size, v.temporal_patch_size
    padded = frames + (-frames % temporal)  # frames padded to a whole temporal patch
    grid_t = max(padded // temporal, 1)
    patches = grid_t * units * merge * merge
    values = v.in_channels * temporal * v.patch_size * v.patch_size
    return MmItem(modality, patches // (merge * merge), patches, patches * values)


def _qwen_image_units(v: VisionGeometry, max_pixels: int | None) -> int:
    unit = v.patch_size * v.spatial_merge_size
    height, width = _most_features(max_pixels or QWEN_VL_MAX_IMAGE_TOKENS * unit * unit, unit)
    return height * width


def max_size_items(arch: ModelArchitecture, *, max_model_len: int) -> dict[str, MmItem]:
    """The maximum-size item of each modality the tower serves (`get_mm_max_tokens_per_item` with one item of
    each); empty for a family colo does not size."""
    v, family = arch.vision, family_of(arch)
    if v is None or family is None:
        return {}
    if family == "gemma3":
        size = v.image_size or SIGLIP_IMAGE_SIZE
        patches = (size // v.patch_size) ** 2
        tokens = v.tokens_per_image or GEMMA3_TOKENS_PER_IMAGE
        return {"image": MmItem("image", tokens, patches, v.in_channels * size * size)}
    units = _qwen_image_units(v, v.max_pixels)
    items = {"image": _qwen_item(v, "image", units=units, frames=1)}
    if "video" not in v.modalities:
        return items
    if family == "qwen3_vl":
        video_units = _qwen_image_units(
            v, (v.video_max_pixels or QWEN3_VL_VIDEO_MAX_PIXELS) // v.temporal_patch_size
        )
        items["video"] = _qwen_item(v, "video", units=video_units, frames=2)
        return items
    # Qwen2-VL: frames of the image with most features while the tokens fit max_model_len (start at one)
    frames = 1
    while _qwen_item(v, "video", units=units, frames=frames + 1).tokens <= max_model_len:
        frames += 1
    frames = max(min(frames, QWEN2_VL_MAX_FRAMES_PER_VIDEO), 1)
    items["video"] = _qwen_item(v, "video", units=units, frames=frames)
    return items


def prefix_lm_item_tokens(arch: ModelArchitecture) -> dict[str, int] | None:
    """The tokens of one maximum-size item of each modality the model serves, as vLLM's engine/arg_utils.py::
    _get_min_mm_batched_tokens takes them from the processor's precomputed `get_mm_max_tokens_per_item` (one item
    of every supported modality, whatever its --limit-mm-per-prompt); None where the processor has none (vLLM
    then sets no floor) or colo does not read it. Gemma 4 only: image and video, and audio where the checkpoint
    has an audio tower (vllm 0.22.0 - 0.34.0 models/gemma4_mm.py: `tokens["audio"] = processor.audio_seq_length`
    when its config's audio_config is set)."""
    v = arch.vision
    if v is None or arch.architecture != GEMMA4_ARCHITECTURE:
        return None
    tokens = {"image": v.tokens_per_image or GEMMA4_TOKENS_PER_IMAGE}
    if arch.audio_tower:
        tokens["audio"] = GEMMA4_AUDIO_TOKENS
    return {**tokens, "video": GEMMA4_VIDEO_TOKENS}


def profiled_batch(
    arch: ModelArchitecture,
    *,
    max_model_len: int,
    max_num_batched_tokens: int,
    max_num_seqs: int,
    mm_limits: dict[str, int],
    chunked_prefill: bool = True,
) -> tuple[MmItem, int] | None:
    """The modality `profile_run` encodes and how many of its maximum-size items (`MultiModalBudget`)."""
    allowed = {
        m: item
        for m, item in max_size_items(arch, max_model_len=max_model_len).items()
        if mm_limits.get(m, UNLIMITED_ITEMS) > 0 and item.tokens > 0
    }
    if not allowed:
        return None
    modality, item = max(allowed.items(), key=lambda kv: (kv[1].tokens, kv[0]))
    budget = max(max_num_batched_tokens, max(i.tokens for i in allowed.values()))
    per_prompt = max(1, min(mm_limits.get(modality, UNLIMITED_ITEMS), max_model_len // item.tokens))
    requests = max_num_seqs if chunked_prefill else min(max_num_seqs, max_num_batched_tokens // item.tokens)
    return item, max(1, min(budget // item.tokens, requests * per_prompt))


def _per_patch_peak(arch: ModelArchitecture, family: Family, tp: int) -> int:
    """Elements alive per patch at the tower's forward peak, besides its pixel values."""
    v = arch.vision
    assert v is not None
    h, i = v.hidden_size, v.intermediate_size
    if family == "gemma3":
        attention = 3 * h + 4 * h // tp
        mlp = 2 * h + 2 * i // tp
        return max(attention, mlp)
    attention = 3 * h + 8 * h // tp
    mlp = 2 * h + (3 if family == "qwen2_5_vl" else 2) * i // tp
    head_dim = h // (v.num_heads or 16)
    rotary = head_dim + 8  # cos and sin of half a head each, in the model dtype; int64 (row, column) ids
    position = h if family == "qwen3_vl" else 0  # the learned position embeddings, one row per patch
    return max(attention, mlp) + rotary + position


def encoder_profile(
    arch: ModelArchitecture,
    *,
    max_model_len: int,
    max_num_batched_tokens: int,
    max_num_seqs: int,
    mm_limits: dict[str, int] | None = None,
    tensor_parallel_size: int = 1,
    chunked_prefill: bool = True,
    items_rule: str = "encoder_budget",
) -> EncoderProfile:
    """The encoder's share of one rank's profile (the encoder runs sharded like the decoder). `items_rule` is
    the release's `mm_profile_batch`: "encoder_budget" (MultiModalBudget, above) or "one_item" (one item of
    the modality with the most tokens: what colo read before 0.22, whose budget code it has not re-read)."""
    family = family_of(arch)
    v = arch.vision
    if v is None:
        return EncoderProfile(None, 0, 0, 0, sized=True)
    if family is None or not (v.hidden_size and v.intermediate_size):
        return EncoderProfile(None, 0, 0, 0, sized=False)
    batch = profiled_batch(
        arch,
        max_model_len=max_model_len,
        max_num_batched_tokens=max_num_batched_tokens,
        max_num_seqs=max_num_seqs,
        mm_limits=mm_limits or {},
        chunked_prefill=chunked_prefill,
    )
    if batch is None:
        return EncoderProfile(None, 0, 0, 0, sized=True)
    item, count = batch
    if items_rule == "one_item":
        count = 1
    e = arch.dtype_bytes
    pixels = count * item.pixel_values * e
    outputs = count * item.tokens * v.out_hidden_size * (1 + v.deepstack_layers) * e
    peak = pixels + count * item.patches * _per_patch_peak(arch, family, tensor_parallel_size) * e
    return EncoderProfile(item, count, peak, pixels + outputs, sized=True)
