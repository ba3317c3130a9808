"""The stack's Pulumi secrets as Kubernetes Secrets: colo:hfToken as `hf-token`, colo:vllmApiKey as
`vllm-api-key`. Their values stay encrypted in Pulumi state; `colo render` leaves these objects out."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import pulumi
import pulumi_kubernetes as k8s


@dataclass(frozen=True)
class StackSecretArgs:
    namespace: pulumi.Input[str]
    name: str  # the Kubernetes Secret's name, which the pods refer to
    key: str
    value: pulumi.Output[str]  # secret: it stays encrypted in Pulumi state
    labels: dict[str, str]


class _StackSecret(pulumi.ComponentResource):
    pulumi_type: ClassVar[str]
    secret_name: pulumi.Output[str]

    def __init__(self, name: str, args: StackSecretArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(self.pulumi_type, name, None, opts)
        secret = k8s.core.v1.Secret(
            name,
            metadata=k8s.meta.v1.ObjectMetaArgs(name=args.name, namespace=args.namespace, labels=args.labels),
            type="Opaque",
            string_data={args.key: args.value},
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.secret_name = secret.metadata.name
        self.register_outputs({"secret_name": self.secret_name})


# One component type per secret, each named as first released: the type is part of every child's URN,
# so a rename would make Pulumi replace the Secret.
class HfTokenSecret(_StackSecret):
    pulumi_type = "colo:hf_token:HfTokenSecret"


class ApiKeySecret(_StackSecret):
    pulumi_type = "colo:api_key:ApiKeySecret"


BY_SECRET_NAME: dict[str, type[_StackSecret]] = {"hf-token": HfTokenSecret, "vllm-api-key": ApiKeySecret}


def declare_secret(args: StackSecretArgs, opts: pulumi.ResourceOptions) -> pulumi.Output[str]:
    """The Secret's name as an output, so whatever refers to it waits for it."""
    return BY_SECRET_NAME[args.name](args.name, args, opts).secret_name
