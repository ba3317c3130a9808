"""The stack's Pulumi secrets as Kubernetes Secrets: colo:hfToken as `hf-token`, colo:vllmApiKey as
`vllm-api-key`. Their values stay encrypted in Pulumi state; `colo render` leaves these objects out."""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s


def stack_secret(
    name: str,
    *,
    namespace: pulumi.Input[str],
    key: str,
    value: pulumi.Output[str],  # secret: it stays encrypted in Pulumi state
    labels: dict[str, str],
    opts: pulumi.ResourceOptions,
) -> k8s.core.v1.Secret:
    """A Secret named `name` (the name the pods refer to), holding `value` under `key`."""
    return k8s.core.v1.Secret(
        name,
        metadata=k8s.meta.v1.ObjectMetaArgs(name=name, namespace=namespace, labels=labels),
        type="Opaque",
        string_data={key: value},
        opts=opts,
    )
