"""The `app.kubernetes.io/*` labels every object carries, and the narrower set a pair's pods are selected by."""

from __future__ import annotations

from colo.plan.kubernetes_spec import KubernetesSpec

PAIR_LABEL = "colo.dev/pair"


def standard_labels(spec: KubernetesSpec, component: str) -> dict[str, str]:
    return {
        "app.kubernetes.io/name": "colo",
        "app.kubernetes.io/instance": spec.instance,
        "app.kubernetes.io/component": component,
        "app.kubernetes.io/part-of": "colo",
        "app.kubernetes.io/managed-by": "pulumi",
    }


def pairs_selector(spec: KubernetesSpec) -> dict[str, str]:
    """Every pair pod of this stack."""
    return {"app.kubernetes.io/name": "colo", "app.kubernetes.io/instance": spec.instance}


def pair_selector(spec: KubernetesSpec, pair: str) -> dict[str, str]:
    """Stable across releases: a Deployment's selector cannot change after creation."""
    return {**pairs_selector(spec), PAIR_LABEL: pair}


def pair_labels(spec: KubernetesSpec, pair: str) -> dict[str, str]:
    return {**standard_labels(spec, "gpu-pair"), PAIR_LABEL: pair}
