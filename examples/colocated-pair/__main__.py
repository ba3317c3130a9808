"""colo's co-located pair in a program of one's own: the team's namespace and storage class, a Service of its own."""

import pulumi
import pulumi_kubernetes as k8s

from colo.components import (
    Cluster,
    ColocatedPair,
    ColocatedPairArgs,
    IngressSource,
    ModelStore,
    ModelStoreArgs,
    Network,
    NodePool,
    ServerSpec,
    VllmImage,
)

config = pulumi.Config()
namespace = config.require("namespace")  # the team's, made by the platform team: not declared here
storage_class = config.require("storageClass")  # the cluster's
max_model_len = config.require_int("maxModelLen")

store = ModelStore("models", ModelStoreArgs(namespace=namespace, storage_class=storage_class, size="100Gi"))

vllm = VllmImage(version="0.19.1")  # the release whose memory rules size the servers, and its image
chat = ColocatedPair(
    "chat",
    ColocatedPairArgs(
        llm=ServerSpec(model="Qwen/Qwen3-8B-FP8", max_model_len=max_model_len, vllm=vllm),
        embedding=ServerSpec(model="Qwen/Qwen3-Embedding-0.6B", vllm=vllm),
        namespace=namespace,
        model_claim=store.claim_name,
        cluster=Cluster(kubernetes_version="1.34", gpu_pairing="uuid-handoff"),
        node_pool=NodePool(
            gpu="L40S", instance_type="g6e.xlarge", node_selector={"team.example.com/gpu": "l40s"}
        ),
        network=Network(allow_from=[IngressSource(), IngressSource(namespace="apps")]),
    ),
)

# The team's own Service: one stable name in front of the pair's LLM, for the apps namespace's clients.
llm = chat.figures.by_role()["llm"]
api = k8s.core.v1.Service(
    "chat-api",
    metadata=k8s.meta.v1.ObjectMetaArgs(
        name="chat-api", namespace=namespace, labels={"team.example.com/app": "chat"}
    ),
    spec=k8s.core.v1.ServiceSpecArgs(
        selector=chat.selector,
        ports=[k8s.core.v1.ServicePortArgs(name="http", port=80, target_port=llm.port)],
    ),
)

pulumi.export("endpoint", pulumi.Output.concat("http://", api.metadata.name, ".", namespace, ".svc/v1"))
pulumi.export("llmKvTokens", chat.kv_tokens.apply(lambda tokens: tokens["llm"]))
pulumi.export("utilizations", chat.utilizations)
pulumi.export("predictedUsedMiB", chat.predicted_used_mib)
pulumi.export("startupProbeSeconds", chat.startup_probe_seconds)
