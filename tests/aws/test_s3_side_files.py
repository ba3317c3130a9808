"""The files vLLM reads beside config.json (colo.vllm.checkpoint.files.SIDE_FILES), read from an S3 prefix as from
the local model directory the weight sync makes of it: a ModelOpt hf_quant_config.json (merged into the config,
vllm 0.11.0+ transformers_utils/config.py::get_config), a GPTQ/AWQ quantize_config.json, a sentence-transformers
sentence_bert_config.json (its max_seq_length is the derived max_model_len,
config/model.py::_get_and_verify_max_len), a vision model's preprocessor_config.json (the largest image the
multimodal profile encodes) and a Qwen3-VL video_preprocessor_config.json (the pixels of the dummy video). The same files give the same architecture and the same plan from either place."""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from colo.aws.s3_profile import S3ProfileError, read_s3_profile
from colo.config import parse_stack_config
from colo.plan.server import Server
from colo.plan.stack import Plan, make_plan
from colo.stackfiles import load_stack
from colo.vllm.checkpoint.architecture import ModelArchitecture
from colo.vllm.checkpoint.files import SIDE_FILES, architecture_from_path
from colo.vllm.process.mm_profile import encoder_profile, max_size_items
from tests.aws.conftest import BUCKET, put_model, record_gets
from tests.hub.fixtures import HUB_FILES
from tests.model_files import safetensors_blob
from tests.vllm.checkpoint.quant_fixtures import fixture

LLAMA = "meta-llama/Llama-3.2-1B-Instruct"
EMBEDDER = "Qwen/Qwen3-Embedding-4B"
VERSION = (
    "0.19.1"  # reads hf_quant_config.json (0.11.0+) and a sentence_bert_config.json without do_lower_case
)
WEIGHTS = safetensors_blob({"model.embed_tokens.weight": 4096, "model.layers.0.mlp.up_proj.weight": 8192})
BERT_CONFIG = {"max_seq_length": 512, "do_lower_case": False}


def _files(model: str, **side: Any) -> dict[str, bytes]:
    """`model`'s stored config.json with a safetensors file, and each side file given (name without .json)."""
    files = {"config.json": (HUB_FILES / model / "config.json").read_bytes(), "model.safetensors": WEIGHTS}
    return files | {f"{name}.json": json.dumps(value).encode() for name, value in side.items()}


def _directory(root: Path, files: dict[str, bytes]) -> Path:
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    return root


def _both(s3: Any, tmp_path: Path, model: str, files: dict[str, bytes]) -> tuple[ModelArchitecture, ...]:
    """The architecture of `files` read from an S3 prefix and from a model directory, their sources set aside."""
    prefix = f"{tmp_path.name}/"  # each set of files under its own prefix
    put_model(s3, prefix, files)
    remote = read_s3_profile(f"s3://{BUCKET}/{prefix}", model, s3=s3)
    local = architecture_from_path(_directory(tmp_path, files), model)
    return replace(remote, source=""), replace(local, source="")


def _plan(s3: Any, role: str, model: str, profile: str, **settings: Any) -> Plan:
    """The local stack with its `role` server for `model` sized from `profile` (a directory or an s3:// prefix)."""
    raw = copy.deepcopy(load_stack("local").values)
    pair = raw["pairs"][0]
    pair[role] = {"model": model, "profile": profile, "vllm": {"version": VERSION}, **settings}
    return make_plan(parse_stack_config(raw), s3_profile=lambda uri, m: read_s3_profile(uri, m, s3=s3))


def _server(s3: Any, role: str, model: str, profile: str, **settings: Any) -> Server:
    plan = _plan(s3, role, model, profile, **settings)
    assert plan.feasible, plan.problems
    return next(s for s in plan.pairs[0].servers if s.role == role)


def _agree(
    s3: Any, tmp_path: Path, role: str, model: str, files: dict[str, bytes], **settings: Any
) -> Server:
    """The `role` server sized from `files` under an S3 prefix, checked to be the one a model directory gives."""
    prefix = f"{tmp_path.name}/"  # each set of files under its own prefix
    put_model(s3, prefix, files)
    remote = _server(s3, role, model, f"s3://{BUCKET}/{prefix}", **settings)
    local = _server(s3, role, model, str(_directory(tmp_path, files)), **settings)
    assert _unsourced(remote) == _unsourced(local)
    assert remote.args == local.args
    return remote


def _unsourced(server: Server) -> str:
    """The server's memory plan, every figure of it, with where its config.json was read set aside."""
    return repr(server.memory_plan).replace(server.memory_plan.budget.spec.arch.source, "<config.json>")


def test_an_s3_prefix_with_hf_quant_config_sizes_as_the_same_files_in_a_local_directory_do(
    s3: Any, tmp_path: Path
) -> None:
    modelopt, _ = fixture("modelopt-fp8")
    remote, local = _both(s3, tmp_path, LLAMA, _files(LLAMA, hf_quant_config=modelopt))
    assert remote == local
    assert (remote.quantization, remote.quant_scheme.declared_in) == ("modelopt", "hf_quant_config.json")
    quantized = _agree(s3, tmp_path / "q", "llm", LLAMA, _files(LLAMA, hf_quant_config=modelopt))
    plain = _agree(s3, tmp_path / "p", "llm", LLAMA, _files(LLAMA))
    assert quantized.memory_plan != plain.memory_plan  # the block changes the plan, and S3 sees it


def test_an_s3_prefix_with_quantize_config_reads_its_gptq_block_as_a_local_directory_does(
    s3: Any, tmp_path: Path
) -> None:
    model = "TheBloke/Wizard-Vicuna-30B-Uncensored-GPTQ"
    files = {
        name: (HUB_FILES / model / name).read_bytes() for name in ("config.json", "quantize_config.json")
    }
    remote, local = _both(s3, tmp_path, model, {**files, "model.safetensors": WEIGHTS})
    assert remote == local
    assert remote.quant_scheme.declared_in in ("config.json", "quantize_config.json")


def test_an_s3_prefix_with_sentence_bert_config_caps_max_model_len_as_locally(
    s3: Any, tmp_path: Path
) -> None:
    """max_seq_length is the derived max_model_len: a maxModelLen above it is refused from either place, and one
    within it is planned alike."""
    files = _files(EMBEDDER, sentence_bert_config=BERT_CONFIG)
    put_model(s3, "bert/", files)
    problems = [
        [(p.path, p.message) for p in _plan(s3, "embedding", EMBEDDER, where, maxModelLen=8192).problems]
        for where in (f"s3://{BUCKET}/bert/", str(_directory(tmp_path / "bert", files)))
    ]
    assert problems[0] == problems[1]
    assert [path for path, _ in problems[0]] == ["colo:pairs[0].embedding.maxModelLen"]
    assert (
        "(8192) is greater than the derived max_model_len (max_position_embeddings=512 " in problems[0][0][1]
    )
    capped = _agree(s3, tmp_path / "c", "embedding", EMBEDDER, files, maxModelLen=512)
    assert capped.memory_plan.budget.spec.limits.max_model_len == 512
    _agree(
        s3, tmp_path / "u", "embedding", EMBEDDER, _files(EMBEDDER), maxModelLen=8192
    )  # without it: no cap


def test_an_embedding_left_without_max_model_len_gets_its_sentence_transformers_length_not_one_vllm_refuses(
    s3: Any, tmp_path: Path
) -> None:
    """colo's companion default (8192) would exceed the derived 512 and vLLM would refuse it at startup; the
    plan runs the embedding at the length vLLM derives instead, from either place."""
    capped = _agree(
        s3, tmp_path / "c", "embedding", EMBEDDER, _files(EMBEDDER, sentence_bert_config=BERT_CONFIG)
    )
    assert capped.memory_plan.budget.spec.limits.max_model_len == 512
    assert capped.args[capped.args.index("--max-model-len") + 1] == "512"
    uncapped = _agree(s3, tmp_path / "u", "embedding", EMBEDDER, _files(EMBEDDER))
    assert uncapped.memory_plan.budget.spec.limits.max_model_len == 8192  # the companion default


def test_an_s3_prefix_with_preprocessor_config_profiles_the_image_it_names(s3: Any, tmp_path: Path) -> None:
    model = "google/gemma-3-4b-it"
    files = {
        name: (HUB_FILES / model / name).read_bytes() for name in ("config.json", "preprocessor_config.json")
    }
    remote, local = _both(s3, tmp_path, model, {**files, "model.safetensors": WEIGHTS})
    assert remote == local
    assert remote.vision is not None
    bigger = {"max_pixels": 1003520, "size": {"longest_edge": 1003520}}
    qwen = "Qwen/Qwen2.5-VL-7B-Instruct"
    remote, local = _both(s3, tmp_path / "qwen", qwen, _files(qwen, preprocessor_config=bigger))
    assert remote == local
    assert remote.vision is not None and remote.vision.max_pixels == 1003520


def test_an_s3_prefix_without_side_files_keeps_todays_figures(s3: Any, tmp_path: Path) -> None:
    """Nothing beyond config.json and the safetensors headers is fetched: the listing says no side file is there,
    and the architecture is the config's own."""
    put_model(s3, "plain/", _files(LLAMA))
    gets = record_gets(s3)
    arch = read_s3_profile(f"s3://{BUCKET}/plain/", LLAMA, s3=s3)
    assert sorted({key for key, _ in gets}) == ["plain/config.json", "plain/model.safetensors"]
    assert (arch.quantization, arch.encoder_max_seq_length) == ("none", None)
    assert arch.vision is None


@pytest.mark.parametrize("name", SIDE_FILES)
def test_a_side_file_that_is_not_json_names_the_object(s3: Any, name: str) -> None:
    put_model(s3, "broken/", {**_files(LLAMA), name: b"{"})
    with pytest.raises(S3ProfileError, match=rf"^s3://models/broken/{name}: "):
        read_s3_profile(f"s3://{BUCKET}/broken/", LLAMA, s3=s3)


def test_a_refused_side_file_read_is_an_error_naming_the_object(s3: Any) -> None:
    """Only a missing object is an absent file: a refusal (here AccessDenied) stops the read, as for config.json."""
    put_model(s3, "denied/", _files(LLAMA, sentence_bert_config=BERT_CONFIG))

    def deny(params: dict[str, Any], **_: Any) -> None:
        if params["Key"].endswith("sentence_bert_config.json"):
            raise ClientError({"Error": {"Code": "AccessDenied", "Message": "Access Denied"}}, "GetObject")

    s3.meta.events.register("provide-client-params.s3.GetObject", deny)
    with pytest.raises(S3ProfileError, match=r"s3://models/denied/sentence_bert_config.json: AccessDenied"):
        read_s3_profile(f"s3://{BUCKET}/denied/", LLAMA, s3=s3)


WITH_SIDE_FILES = sorted(
    path.parent.relative_to(HUB_FILES).as_posix()
    for path in HUB_FILES.glob("*/*/config.json")
    if any((path.parent / name).exists() for name in (*SIDE_FILES, "modules.json"))
)
STORED = [*WITH_SIDE_FILES, "meta-llama/Llama-3.2-1B-Instruct", "mistralai/Mixtral-8x7B-v0.1"]


@pytest.mark.parametrize("model", STORED)
def test_an_s3_prefix_and_a_model_directory_give_a_stored_checkpoint_the_same_architecture(
    s3: Any, tmp_path: Path, model: str
) -> None:
    """Every file stored for the checkpoint (tests/hub_files), with a safetensors file so neither source falls back
    on an index: the S3 prefix and the directory read the same architecture from them."""
    stored = HUB_FILES / model
    files = {
        p.relative_to(stored).as_posix(): p.read_bytes() for p in sorted(stored.rglob("*")) if p.is_file()
    }
    remote, local = _both(s3, tmp_path, model.split("@")[0], {**files, "model.safetensors": WEIGHTS})
    assert remote == local


QWEN3_5 = "Qwen/Qwen3.5-9B"
VIDEO_VERSION = "0.22.0"  # profiles the encoder with a budget of maximum-size items (MultiModalBudget)
# A video processor allowing 64 Mi pixels over a frame pair: 32768 merged tokens of 32 x 32 pixels, above the
# 16384 of the largest image, so the video is the item vLLM profiles the encoder with
# (vllm 0.22.0 models/qwen3_vl.py::Qwen3VLProcessingInfo.get_max_video_tokens).
LARGE_VIDEO = {"size": {"longest_edge": 67108864, "shortest_edge": 4096}, "temporal_patch_size": 2}


def _profiled(server: Server) -> tuple[str, int, int]:
    """The item the server's encoder profile encodes: modality, tokens, and the tower's peak bytes."""
    spec = server.memory_plan.budget.spec
    limits = spec.limits
    profile = encoder_profile(
        spec.arch,
        max_model_len=limits.max_model_len,
        max_num_batched_tokens=limits.max_num_batched_tokens,
        max_num_seqs=limits.max_num_seqs,
        mm_limits=dict(spec.mm_limits),
    )
    assert profile.item is not None
    return profile.item.modality, profile.item.tokens, profile.peak_bytes


def test_a_video_preprocessor_config_sizes_the_profiled_video_alike_from_an_s3_prefix_and_a_directory(
    s3: Any, tmp_path: Path
) -> None:
    """The video processor's size.longest_edge (its own file, which transformers loads the video processor from)
    is the dummy video's pixels: read from either place, it makes the video the profiled item, with its tokens."""
    files = _files(QWEN3_5, video_preprocessor_config=LARGE_VIDEO)
    remote, local = _both(s3, tmp_path, QWEN3_5, files)
    assert remote == local
    assert remote.vision is not None and remote.vision.video_max_pixels == 67108864
    video = _agree(s3, tmp_path / "v", "llm", QWEN3_5, files, vllm={"version": VIDEO_VERSION})
    assert _profiled(video)[:2] == ("video", 32768)
    plain = _agree(s3, tmp_path / "p", "llm", QWEN3_5, _files(QWEN3_5), vllm={"version": VIDEO_VERSION})
    # the larger dummy video is the tower's peak, which the profile reserves beside the weights
    assert video.memory_plan.budget.activation_bytes > plain.memory_plan.budget.activation_bytes


def test_without_a_video_preprocessor_config_the_video_keeps_the_processors_default(
    s3: Any, tmp_path: Path
) -> None:
    """No file: the Qwen3-VL video processor's default 25,165,824 pixels (12288 tokens over a frame pair), under
    the largest image's 16384, so the image stays the profiled item from either place."""
    remote, local = _both(s3, tmp_path, QWEN3_5, _files(QWEN3_5))
    assert remote == local
    assert remote.vision is not None and remote.vision.video_max_pixels is None
    assert max_size_items(remote, max_model_len=32768)["video"].tokens == 12288
    plain = _agree(s3, tmp_path / "p", "llm", QWEN3_5, _files(QWEN3_5), vllm={"version": VIDEO_VERSION})
    assert _profiled(plain)[:2] == ("image", 16384)
