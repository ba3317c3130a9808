"""object_changes on hand-built manifests: keys, named-list matching, sorted output, no values leaked."""

from __future__ import annotations

import copy
from typing import Any

from colo.diff.objects import keyed, object_changes, object_key


def _deployment(name: str, llm_args: list[str]) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "colo"},
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {"name": "embedding", "args": ["e"]},
                        {
                            "name": "llm",
                            "args": llm_args,
                            "env": [{"name": "HF_TOKEN", "value": "hf_secret"}],
                        },
                    ]
                }
            }
        },
    }


NAMESPACE = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "colo"}}


def test_objects_are_keyed_by_kind_namespace_and_name() -> None:
    assert object_key(_deployment("qwen27b", [])) == "Deployment/colo/qwen27b"
    assert object_key(NAMESPACE) == "Namespace/colo"  # cluster-scoped: no namespace segment


def test_added_removed_and_changed_objects_are_listed_sorted() -> None:
    before = keyed([NAMESPACE, _deployment("b", ["--x", "1"]), _deployment("gone", [])])
    after = keyed([_deployment("new", []), NAMESPACE, _deployment("b", ["--x", "2"]), _deployment("a", [])])
    changes = object_changes(before, after)
    assert changes.added == ("Deployment/colo/a", "Deployment/colo/new")
    assert changes.removed == ("Deployment/colo/gone",)
    [changed] = changes.changed
    assert changed.key == "Deployment/colo/b"
    assert changed.fields == ("spec.template.spec.containers[name=llm].args[1]",)


def test_containers_are_matched_by_name_not_position() -> None:
    before = _deployment("b", [])
    after = copy.deepcopy(before)
    after["spec"]["template"]["spec"]["containers"].reverse()
    assert object_changes(keyed([before]), keyed([after])).empty


def test_changed_values_are_never_reported_only_their_paths() -> None:
    before = _deployment("b", [])
    after = copy.deepcopy(before)
    after["spec"]["template"]["spec"]["containers"][1]["env"][0]["value"] = "hf_other"
    [changed] = object_changes(keyed([before]), keyed([after])).changed
    assert changed.fields == ("spec.template.spec.containers[name=llm].env[name=HF_TOKEN].value",)
    assert "hf_" not in repr(changed)


def test_identical_renders_have_no_changes() -> None:
    objects = keyed([NAMESPACE, _deployment("b", ["--x"])])
    assert object_changes(objects, copy.deepcopy(objects)).empty
