"""In the pod: each server writes its compile cache to its own directory of the model volume and nowhere else
there; the weights stay read-only. A ReadOnlyMany volume keeps the cache in the pod."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

from colo.components.containers import COMPILE_CACHE_DIR, MODELS_VOLUME
from colo.mock_run import run_program
from colo.model_volume import MODEL_ROOT
from colo.stackfiles import load_stack
from tests.components.stacks import DEPLOYMENT, env_of, pod_spec
from tests.harness import RecordingMocks


def _pods(values: dict[str, Any]) -> list[dict[str, Any]]:
    run = run_program(replace(load_stack("local"), values=values), mocks=RecordingMocks())
    return [pod_spec(d.inputs) for d in run.mocks.of_type(DEPLOYMENT)]


def _servers(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        c for c in [*spec.get("initContainers", []), *spec["containers"]] if c["name"] in ("llm", "embedding")
    ]


def _model_mounts(container: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in container["volumeMounts"] if m["name"] == MODELS_VOLUME]


def test_each_server_mounts_its_own_cache_directory_writable_and_the_weights_read_only() -> None:
    (spec,) = _pods(copy.deepcopy(load_stack("local").values))
    sub_paths = []
    for server in _servers(spec):
        weights, cache = _model_mounts(server)
        assert weights == {"name": MODELS_VOLUME, "mountPath": MODEL_ROOT, "readOnly": True}
        assert cache["mountPath"] == COMPILE_CACHE_DIR and not cache.get("readOnly")
        assert cache["subPath"].startswith(f".vllm-cache/chat-{server['name']}/v")
        assert env_of(server)["VLLM_CACHE_ROOT"] == COMPILE_CACHE_DIR
        sub_paths.append(cache["subPath"])
    assert len(sub_paths) == 2 and len(set(sub_paths)) == 2
    (volume,) = [v for v in spec["volumes"] if v["name"] == MODELS_VOLUME]
    assert not volume["persistentVolumeClaim"].get("readOnly")


def test_a_read_only_many_volume_keeps_the_cache_in_the_pod_and_the_volume_read_only() -> None:
    values = copy.deepcopy(load_stack("local").values)
    values["storage"] = {**values.get("storage", {}), "accessMode": "ReadOnlyMany"}
    (spec,) = _pods(values)
    for server in _servers(spec):
        assert [m["mountPath"] for m in _model_mounts(server)] == [MODEL_ROOT]
        assert "VLLM_CACHE_ROOT" not in env_of(server)
    (volume,) = [v for v in spec["volumes"] if v["name"] == MODELS_VOLUME]
    assert volume["persistentVolumeClaim"]["readOnly"] is True
