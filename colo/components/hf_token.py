"""The Hugging Face token as a Kubernetes Secret, made from the Pulumi secret colo:hfToken."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

TOKEN_KEY = "token"


@dataclass(frozen=True)
class HfTokenSecretArgs:
    namespace: pulumi.Input[str]
    token: pulumi.Output[str]  # secret: it stays encrypted in Pulumi state
    labels: dict[str, str]


class HfTokenSecret(pulumi.ComponentResource):
    secret_name: pulumi.Output[str]
    key: str = TOKEN_KEY

    def __init__(
        self, name: str, args: HfTokenSecretArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("colo:hf_token:HfTokenSecret", name, None, opts)
        secret = k8s.core.v1.Secret(
            name,
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name="hf-token", namespace=args.namespace, labels=args.labels
            ),
            type="Opaque",
            string_data={TOKEN_KEY: args.token},
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.secret_name = secret.metadata.name
        self.register_outputs({"secret_name": self.secret_name})
