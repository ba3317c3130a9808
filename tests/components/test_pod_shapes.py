"""What each GPU pairing method puts in the pod: who asks for the GPU, env, volumes, order, probes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import yaml

from colo.mock_run import ProgramRun
from colo.stackfiles import StackFile
from tests.components.stacks import (
    DEPLOYMENT,
    by_name,
    containers_in_start_order,
    env_of,
    limits_of,
    pod_spec,
    variant,
)

GPU, SHARED = "nvidia.com/gpu", "nvidia.com/gpu.shared"


def _pods(run: ProgramRun) -> list[dict[str, Any]]:
    return [pod_spec(d.inputs) for d in run.mocks.of_type(DEPLOYMENT)]


def _time_slicing(run: ProgramRun) -> dict[str, Any]:
    """The device plugin's config file, parsed: its time-slicing section."""
    (config_map,) = [c for c in run.mocks.of_type("kubernetes:core/v1:ConfigMap") if "nvidia" in c.name]
    plugin_config = yaml.safe_load(config_map.inputs["data"]["config.yaml"])
    assert plugin_config["version"] == "v1"
    time_slicing: dict[str, Any] = plugin_config["sharing"]["timeSlicing"]
    return time_slicing


def test_uuid_handoff_gives_the_gpu_to_an_init_container_then_the_embedding_only(
    checked_in_run: Callable[[str, bool], ProgramRun],
) -> None:
    for spec in _pods(checked_in_run("prod", False)):
        init = spec["initContainers"]
        assert init[0]["name"] == "gpu-uuid"
        assert "restartPolicy" not in init[0], "a restartable init container would keep the GPU to itself"
        assert limits_of(init[0]) == {"memory": "128Mi", GPU: "1"}
        containers = by_name(containers_in_start_order(spec))
        assert limits_of(containers["embedding"])[GPU] == "1"
        llm = containers["llm"]
        assert GPU not in limits_of(llm)
        env = env_of(llm)
        assert env["NVIDIA_VISIBLE_DEVICES"] == "all"
        assert env["COLO_VLLM_ACCEPTS_UUID"] == "false"  # prod runs vLLM 0.20.2; UUIDs from 0.24
        assert llm["command"][:3] == ["bash", "/opt/colo/scripts/gpu-uuid-consume.sh", "--"]
        assert {m["name"]: m.get("readOnly", False) for m in llm["volumeMounts"]}["gpu-uuid"] is True


def test_uuid_handoff_passes_the_uuid_itself_to_vllm_that_accepts_it(
    run_variant: Callable[[StackFile], ProgramRun],
) -> None:
    run = run_variant(variant("prod", pairs={"all": {"vllm": {"version": "0.24.0"}}}))
    for spec in _pods(run):
        assert env_of(by_name(spec["containers"])["llm"])["COLO_VLLM_ACCEPTS_UUID"] == "true"


def test_time_slice_asks_one_slice_per_server_and_one_pair_per_node(
    checked_in_run: Callable[[str, bool], ProgramRun],
) -> None:
    run = checked_in_run("local", False)
    for spec in _pods(run):
        for container in containers_in_start_order(spec):
            assert limits_of(container)[SHARED] == "1"
            assert GPU not in limits_of(container)
        term = spec["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]
        assert term["topologyKey"] == "kubernetes.io/hostname"
    assert _time_slicing(run) == {
        "renameByDefault": True,
        "failRequestsGreaterThanOne": True,
        "resources": [{"name": GPU, "replicas": 2}],
    }


def test_time_slice_offers_as_many_slices_as_the_largest_pair_has_servers(
    run_variant: Callable[[StackFile], ProgramRun],
) -> None:
    run = run_variant(variant("dev", cluster={"gpuPairing": "time-slice"}))
    assert _time_slicing(run)["resources"] == [{"name": GPU, "replicas": 3}]


def test_device_plugin_tolerates_the_gpu_taint_and_runs_on_colo_gpu_nodes(
    checked_in_run: Callable[[str, bool], ProgramRun],
) -> None:
    daemon_sets = checked_in_run("prod", False).mocks.of_type("kubernetes:apps/v1:DaemonSet")
    (daemon_set,) = [d for d in daemon_sets if d.inputs["metadata"]["name"] == "nvidia-device-plugin"]
    spec = pod_spec(daemon_set.inputs)
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in spec["tolerations"]
    assert spec["nodeSelector"]["nvidia.com/gpu.present"] == "true"
    assert spec["containers"][0]["image"].endswith(":v0.17.4")


def test_dra_shares_one_claim_among_all_servers_and_installs_no_device_plugin(
    checked_in_run: Callable[[str, bool], ProgramRun],
) -> None:
    run = checked_in_run("dev", False)
    (template,) = run.mocks.of_type("kubernetes:resource.k8s.io/v1:ResourceClaimTemplate")
    assert (
        template.inputs["spec"]["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"]
        == "gpu.nvidia.com"
    )
    assert not run.mocks.of_type("kubernetes:apps/v1:DaemonSet")
    for spec in _pods(run):
        assert spec["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": "single-gpu"}]
        for container in containers_in_start_order(spec):
            assert container["resources"]["claims"] == [{"name": "gpu"}]
            assert not {GPU, SHARED} & set(limits_of(container))


def test_native_sidecars_start_the_llm_after_healthy_embedding_and_reranker(
    checked_in_run: Callable[[str, bool], ProgramRun],
) -> None:
    (spec,) = _pods(checked_in_run("dev", False))
    assert [c["name"] for c in spec["initContainers"]] == ["embedding", "reranker"]
    assert all(c["restartPolicy"] == "Always" and "startupProbe" in c for c in spec["initContainers"])
    assert [c["name"] for c in spec["containers"]] == ["llm"]
    assert spec["containers"][0]["command"] == ["vllm", "serve"]


def test_without_native_sidecars_each_server_waits_for_the_earlier_ones_health(
    run_variant: Callable[[StackFile], ProgramRun],
) -> None:
    run = run_variant(variant("dev", cluster={"nativeSidecars": False}))
    plan = {s["role"]: s for s in run.outputs["plan"]["pairs"][0]["servers"]}
    (spec,) = _pods(run)
    assert "initContainers" not in spec
    containers = by_name(spec["containers"])
    assert [c["name"] for c in spec["containers"]] == ["embedding", "reranker", "llm"]
    assert containers["embedding"]["command"] == ["vllm", "serve"]
    llm = containers["llm"]["command"]
    assert llm[:2] == ["bash", "/opt/colo/scripts/wait-for-health.sh"]
    assert llm[2:10] == [
        "--url",
        "http://127.0.0.1:8001/health",
        "--timeout",
        str(plan["embedding"]["startup_probe_seconds"]),
        "--url",
        "http://127.0.0.1:8002/health",
        "--timeout",
        str(plan["reranker"]["startup_probe_seconds"]),
    ]
    assert llm[10:] == ["--", "vllm", "serve"]


def test_servers_run_the_plan_arguments_verbatim_with_json_kept_whole(
    checked_in_run: Callable[[str, bool], ProgramRun],
) -> None:
    run = checked_in_run("prod", False)
    planned = {s["name"]: s for p in run.outputs["plan"]["pairs"] for s in p["servers"]}
    for deployment in run.mocks.of_type(DEPLOYMENT):
        pair = deployment.inputs["metadata"]["name"]
        for container in containers_in_start_order(pod_spec(deployment.inputs)):
            if container["name"] == "gpu-uuid":
                continue
            assert container["args"] == planned[f"{pair}-{container['name']}"]["vllm_args"]
    moe = next(d for d in run.mocks.of_type(DEPLOYMENT) if d.name == "qwen35b-moe")
    llm_args = by_name(pod_spec(moe.inputs)["containers"])["llm"]["args"]
    assert (
        llm_args[llm_args.index("--speculative-config") + 1] == '{"method":"mtp","num_speculative_tokens":1}'
    )


def test_probes_follow_the_plan_and_never_delay_readiness_or_liveness(
    checked_in_run: Callable[[str, bool], ProgramRun],
) -> None:
    run = checked_in_run("prod", False)
    planned = {s["name"]: s for p in run.outputs["plan"]["pairs"] for s in p["servers"]}
    for deployment in run.mocks.of_type(DEPLOYMENT):
        for container in containers_in_start_order(pod_spec(deployment.inputs)):
            if container["name"] == "gpu-uuid":
                continue
            startup = container["startupProbe"]
            budget = planned[f"{deployment.inputs['metadata']['name']}-{container['name']}"][
                "startup_probe_seconds"
            ]
            assert startup["httpGet"]["path"] == "/health"
            assert startup["periodSeconds"] * startup["failureThreshold"] == budget
            for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
                assert "initialDelaySeconds" not in container[probe]


def test_readiness_and_liveness_give_a_busy_server_five_seconds_to_answer(
    checked_in_run: Callable[[str, bool], ProgramRun],
) -> None:
    for spec in _pods(checked_in_run("prod", False)):
        for container in containers_in_start_order(spec):
            if container["name"] == "gpu-uuid":
                continue
            for probe in ("readinessProbe", "livenessProbe"):
                assert container[probe]["httpGet"]["path"] == "/health"
                assert container[probe]["timeoutSeconds"] == 5
            assert container["livenessProbe"]["failureThreshold"] == 3


def test_deployment_recreates_replaces_first_and_waits_as_long_as_the_plan_says(
    checked_in_run: Callable[[str, bool], ProgramRun],
) -> None:
    run = checked_in_run("prod", False)
    for deployment in run.mocks.of_type(DEPLOYMENT):
        assert deployment.inputs["spec"]["replicas"] == 1
        assert deployment.inputs["spec"]["strategy"] == {"type": "Recreate"}
        options = run.mocks.options_of(deployment)
        assert options.delete_before_replace
        pair = next(
            p for p in run.outputs["plan"]["pairs"] if p["name"] == deployment.inputs["metadata"]["name"]
        )
        slowest_path = sum(s["startup_probe_seconds"] for s in pair["servers"])
        assert int(options.custom_timeouts["create"].rstrip("s")) > slowest_path
        assert options.custom_timeouts["update"] == options.custom_timeouts["create"]


def test_pods_are_unprivileged_with_shm_and_read_only_weights(
    checked_in_run: Callable[[str, bool], ProgramRun],
) -> None:
    for spec in _pods(checked_in_run("prod", False)):
        assert spec["securityContext"]["runAsNonRoot"] is True
        assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        volumes = {v["name"]: v for v in spec["volumes"]}
        assert volumes["dshm"]["emptyDir"]["medium"] == "Memory"
        # Writable at the volume for the compile caches alone (colo.plan.compile_cache); every weight mount is not.
        assert volumes["models"]["persistentVolumeClaim"] == {"claimName": "models"}
        for container in containers_in_start_order(spec):
            security = container["securityContext"]
            assert security["allowPrivilegeEscalation"] is False
            assert security["capabilities"] == {"drop": ["ALL"]}
            mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
            if container["name"] != "gpu-uuid":
                assert mounts["/models"]["readOnly"] is True
                writable = [
                    m for m in container["volumeMounts"] if m["name"] == "models" and not m.get("readOnly")
                ]
                assert [m["subPath"].split("/")[0] for m in writable] == [".vllm-cache"]
                assert "/dev/shm" in mounts
                assert (
                    container["resources"]["limits"]["memory"] == container["resources"]["requests"]["memory"]
                )
        assert spec["tolerations"] == [
            {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
        ]
        assert spec["nodeSelector"] == {"colo.dev/gpu-pool": "colo-prod"}


def test_hf_token_reaches_servers_only_by_secret_reference(
    run_variant: Callable[[StackFile], ProgramRun],
) -> None:
    run = run_variant(variant("local", secret_token=True))
    (secret,) = run.mocks.of_type("kubernetes:core/v1:Secret")
    assert secret.inputs["metadata"]["name"] == "hf-token"
    for spec in _pods(run):
        for container in containers_in_start_order(spec):
            token = env_of(container)["HF_TOKEN"]
            assert token == {"secretKeyRef": {"name": "hf-token", "key": "token"}}


def test_no_token_means_no_secret_and_no_token_env(checked_in_run: Callable[[str, bool], ProgramRun]) -> None:
    run = checked_in_run("local", False)
    assert not run.mocks.of_type("kubernetes:core/v1:Secret")
    for spec in _pods(run):
        assert all("HF_TOKEN" not in env_of(c) for c in containers_in_start_order(spec))
