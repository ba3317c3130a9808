"""The pooling an S3 prefix's sentence-transformers files declare, read as a model directory's are: the weight sync
copies the prefix into the directory vLLM starts from, and vLLM reads modules.json and the Pooling module's
config.json there (transformers_utils/config.py::get_pooling_config, vllm 0.10.1 - 0.34.0). It decides whether an
LLM needs `--runner generate` (0.10.1+ ModelConfig._get_default_runner_type starts a checkpoint with a Pooling
module as a pooling model) and whether a pooling server chunks its prefill (0.22.0 config/model.py::ModelConfig.
is_chunked_prefill_supported). A prefix without modules.json declares nothing, and vLLM takes the class's default.

NovaSearch/stella_en_1.5B_v5 is a Qwen2ForCausalLM whose 1_Pooling/config.json pools MEAN."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from colo.aws.s3_profile import S3ProfileError, read_s3_profile
from colo.config import parse_stack_config
from colo.plan.server import Server
from colo.plan.stack import Plan, make_plan
from colo.stackfiles import load_stack
from colo.vllm.checkpoint.files import architecture_from_path
from colo.vllm.checkpoint.pooling import POOLING_MODULES
from tests.aws.conftest import BUCKET, put_model, record_gets
from tests.hub.fixtures import HUB_FILES
from tests.model_files import safetensors_blob

STELLA = "NovaSearch/stella_en_1.5B_v5"
STELLA_DIR = HUB_FILES / STELLA
MAX_MODEL_LEN = 8192


def _stella_files(*, sentence_transformers: bool = True) -> dict[str, bytes]:
    """stella's checkpoint files as a prefix holds them, with a safetensors file; without its sentence-transformers
    files (modules.json and the module folders) where `sentence_transformers` is False."""
    files = {
        path.relative_to(STELLA_DIR).as_posix(): path.read_bytes()
        for path in sorted(STELLA_DIR.rglob("*"))
        if path.is_file()
    }
    if not sentence_transformers:
        files = {"config.json": files["config.json"]}
    return {**files, "model.safetensors": safetensors_blob({"model.embed_tokens.weight": 4096})}


def _reader(s3: Any) -> Any:
    return lambda uri, model: read_s3_profile(uri, model, s3=s3)


def _plan(s3: Any, version: str, **roles: str) -> Plan:
    """The local stack at vLLM `version`, each role in `roles` read from (and its weights synced from) that S3
    prefix under the bucket."""
    raw = copy.deepcopy(load_stack("local").values)
    raw["storage"] = {**raw["storage"], "syncImage": "registry.example/colo-sync:1"}
    pair = raw["pairs"][0]
    for role in ("llm", "embedding"):
        pair[role]["vllm"] = {"version": version}
    for role, prefix in roles.items():
        uri = f"s3://{BUCKET}/{prefix}"
        pair[role] = {**pair[role], "model": STELLA, "profile": uri, "weightsUri": uri}
        pair[role]["maxModelLen"] = MAX_MODEL_LEN
    plan = make_plan(parse_stack_config(raw), s3_profile=_reader(s3))
    assert plan.feasible, plan.problems
    return plan


def _server(plan: Plan, role: str) -> Server:
    return next(s for s in plan.pairs[0].servers if s.role == role)


def _runner_flags(args: tuple[str, ...]) -> list[str]:
    return [
        a for i, a in enumerate(args) if a in ("--runner", "--task") or args[i - 1] in ("--runner", "--task")
    ]


def _batch(server: Server) -> tuple[int | None, bool]:
    limits = server.memory_plan.budget.spec.limits
    return limits.max_num_batched_tokens, limits.chunked_prefill


def test_an_s3_prefix_declares_the_pooling_its_files_do_as_a_model_directory_does(s3: Any) -> None:
    put_model(s3, "stella/", _stella_files())
    arch = read_s3_profile(f"s3://{BUCKET}/stella/", STELLA, s3=s3)
    local = architecture_from_path(STELLA_DIR, STELLA)
    assert arch.declared_pooling == local.declared_pooling == ("MEAN", "INCLUDE")
    assert arch.declared_pooling_mode_string is local.declared_pooling_mode_string is None
    assert arch.checkpoint_bytes == 4096  # the headers are still read


@pytest.mark.parametrize("version", ["0.10.1", "0.19.1", "0.22.0", "0.34.0"])
def test_an_s3_llm_with_a_pooling_module_renders_the_generation_flag(s3: Any, version: str) -> None:
    put_model(s3, "stella/", _stella_files())
    args = _plan(s3, version, llm="stella/").pairs[0].llm.args
    assert _runner_flags(args) == ["--runner", "generate"]


def test_before_the_runner_flag_an_s3_llm_with_a_pooling_module_is_given_the_generate_task(s3: Any) -> None:
    put_model(s3, "stella/", _stella_files())
    assert _runner_flags(_plan(s3, "0.9.2", llm="stella/").pairs[0].llm.args) == ["--task", "generate"]


@pytest.mark.parametrize("version", ["0.10.1", "0.19.1", "0.22.0", "0.34.0"])
def test_an_s3_embedder_with_mean_pooling_gets_the_non_chunking_batch(s3: Any, version: str) -> None:
    """A MEAN-pooled decoder does not chunk, so its default batch holds a whole input (max_model_len); the same
    files without modules.json pool as the class does (LAST) and chunk within the tier's 2048 tokens."""
    put_model(s3, "stella/", _stella_files())
    put_model(s3, "plain/", _stella_files(sentence_transformers=False))
    assert _batch(_server(_plan(s3, version, embedding="stella/"), "embedding")) == (MAX_MODEL_LEN, False)
    assert _batch(_server(_plan(s3, version, embedding="plain/"), "embedding")) == (2048, True)


def test_an_s3_prefix_without_modules_json_keeps_todays_figures(s3: Any) -> None:
    """Nothing beyond config.json and the safetensors headers is fetched, nothing is declared, and the plan is the
    one the prefix gave before colo read its pooling: no runner flag for the LLM, the class's chunking batch for the
    embedder."""
    put_model(s3, "plain/", _stella_files(sentence_transformers=False))
    gets = record_gets(s3)
    arch = read_s3_profile(f"s3://{BUCKET}/plain/", STELLA, s3=s3)
    assert (arch.declared_pooling, arch.declared_pooling_mode_string) == (None, None)
    assert sorted({key for key, _ in gets}) == ["plain/config.json", "plain/model.safetensors"]
    plan = _plan(s3, "0.19.1", llm="plain/", embedding="plain/")
    assert _runner_flags(plan.pairs[0].llm.args) == []
    assert _runner_flags(_server(plan, "embedding").args) == ["--runner", "pooling"]
    assert _batch(_server(plan, "embedding")) == (2048, True)


def test_the_newer_module_type_and_a_string_pooling_mode_are_read_both_ways(s3: Any) -> None:
    """0.30.0+ get_pooling_config (_ST_POOLING_MODULE_TYPES) takes the newer module type and a string
    pooling_mode; earlier releases see no Pooling module in it."""
    files = _stella_files()
    modules = json.loads(files["modules.json"])
    for item in modules:
        if item["type"] == POOLING_MODULES[0]:
            item["type"] = POOLING_MODULES[1]
    files["modules.json"] = json.dumps(modules).encode()
    files["1_Pooling/config.json"] = json.dumps({"pooling_mode": "mean", "include_prompt": True}).encode()
    put_model(s3, "resaved/", files)
    arch = read_s3_profile(f"s3://{BUCKET}/resaved/", STELLA, s3=s3)
    assert (arch.declared_pooling, arch.declared_pooling_mode_string) == (None, ("MEAN", "INCLUDE"))
    assert _runner_flags(_plan(s3, "0.29.0", llm="resaved/").pairs[0].llm.args) == []
    assert _runner_flags(_plan(s3, "0.30.0", llm="resaved/").pairs[0].llm.args) == ["--runner", "generate"]


def test_a_pooling_module_without_its_config_declares_no_key_as_a_model_directory_does(
    s3: Any, tmp_path: Path
) -> None:
    files = {name: data for name, data in _stella_files().items() if not name.startswith("1_Pooling/")}
    put_model(s3, "no-config/", files)
    for name, data in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(data)
    arch = read_s3_profile(f"s3://{BUCKET}/no-config/", STELLA, s3=s3)
    assert arch.declared_pooling == architecture_from_path(tmp_path, STELLA).declared_pooling == ()


def test_a_modules_json_that_is_not_json_names_the_object(s3: Any) -> None:
    put_model(s3, "broken/", {**_stella_files(), "modules.json": b"[{"})
    with pytest.raises(S3ProfileError, match=r"^s3://models/broken/modules.json: "):
        read_s3_profile(f"s3://{BUCKET}/broken/", STELLA, s3=s3)


def test_a_refused_pooling_config_read_is_an_error_naming_the_object(s3: Any) -> None:
    """Only a missing object is an absent file: a refusal (here AccessDenied) stops the read, as for config.json."""
    put_model(s3, "denied/", _stella_files())

    def deny(params: dict[str, Any], **_: Any) -> None:
        if params["Key"].endswith("1_Pooling/config.json"):
            raise ClientError({"Error": {"Code": "AccessDenied", "Message": "Access Denied"}}, "GetObject")

    s3.meta.events.register("provide-client-params.s3.GetObject", deny)
    with pytest.raises(S3ProfileError, match=r"s3://models/denied/1_Pooling/config.json: AccessDenied"):
        read_s3_profile(f"s3://{BUCKET}/denied/", STELLA, s3=s3)
