"""The `app.kubernetes.io/*` labels every object carries, and the narrower set a pair's pods are selected by."""

from __future__ import annotations

from colo.plan.kubernetes_spec import KubernetesSpec

PAIR_LABEL = "colo.dev/pair"
DEFAULT_INSTANCE = "colo"  # app.kubernetes.io/instance where a component is declared outside a stack


def colo_labels(instance: str, component: str) -> dict[str, str]:
    """`instance` groups the objects of one deployment of colo: a stack's cluster.name."""
    return {
        "app.kubernetes.io/name": "colo",
        "app.kubernetes.io/instance": instance,
        "app.kubernetes.io/component": component,
        "app.kubernetes.io/part-of": "colo",
        "app.kubernetes.io/managed-by": "pulumi",
    }


def standard_labels(spec: KubernetesSpec, component: str) -> dict[str, str]:
    return colo_labels(spec.instance, component)


def instance_selector(instance: str) -> dict[str, str]:
    """Every pair pod of one instance."""
    return {"app.kubernetes.io/name": "colo", "app.kubernetes.io/instance": instance}


def pairs_selector(spec: KubernetesSpec) -> dict[str, str]:
    """Every pair pod of this stack."""
    return instance_selector(spec.instance)


def pair_selector_of(instance: str, pair: str) -> dict[str, str]:
    """Stable across releases: a Deployment's selector cannot change after creation."""
    return {**instance_selector(instance), PAIR_LABEL: pair}


def pair_selector(spec: KubernetesSpec, pair: str) -> dict[str, str]:
    return pair_selector_of(spec.instance, pair)


def pair_labels_of(instance: str, pair: str) -> dict[str, str]:
    return {**colo_labels(instance, "gpu-pair"), PAIR_LABEL: pair}
