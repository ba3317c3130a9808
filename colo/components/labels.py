"""The `app.kubernetes.io/*` labels every object carries, and the narrower set a pair's pods are selected by."""

from __future__ import annotations

from colo.config.schema import StackConfig

PAIR_LABEL = "colo.dev/pair"


def standard_labels(config: StackConfig, component: str) -> dict[str, str]:
    return {
        "app.kubernetes.io/name": "colo",
        "app.kubernetes.io/instance": config.cluster.name,
        "app.kubernetes.io/component": component,
        "app.kubernetes.io/part-of": "colo",
        "app.kubernetes.io/managed-by": "pulumi",
    }


def pairs_selector(config: StackConfig) -> dict[str, str]:
    """Every pair pod of this stack."""
    return {"app.kubernetes.io/name": "colo", "app.kubernetes.io/instance": config.cluster.name}


def pair_selector(config: StackConfig, pair: str) -> dict[str, str]:
    """Stable across releases: a Deployment's selector cannot change after creation."""
    return {**pairs_selector(config), PAIR_LABEL: pair}


def pair_labels(config: StackConfig, pair: str) -> dict[str, str]:
    return {**standard_labels(config, "gpu-pair"), PAIR_LABEL: pair}
