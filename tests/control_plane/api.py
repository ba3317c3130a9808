"""The API server as the tests talk to it: server-side apply that keeps the server's warnings, waits, reads.

Server-side apply is what `kubectl apply --server-side` sends (a PATCH of type application/apply-patch+yaml);
the API server's admission warnings (Pod Security at its `warn` level, deprecated fields) come back as HTTP
`Warning` headers, which the generated clients drop, so the request goes through `ApiClient.call_api`.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml
from kubernetes import client, config, dynamic
from kubernetes.client.exceptions import ApiException

FIELD_MANAGER = "colo-tests"
WARNING = re.compile(r'\d{3}\s+\S+\s+"((?:[^"\\]|\\.)*)"')
T = TypeVar("T")


@dataclass(frozen=True)
class Applied:
    key: str  # Kind/namespace/name
    body: dict[str, Any]
    warnings: tuple[str, ...]


@dataclass(frozen=True)
class Refused:
    key: str
    status: int
    message: str


@dataclass
class ApplyResult:
    applied: list[Applied] = field(default_factory=list)
    refused: list[Refused] = field(default_factory=list)

    @property
    def warnings(self) -> dict[str, tuple[str, ...]]:
        return {item.key: item.warnings for item in self.applied if item.warnings}


def key_of(manifest: dict[str, Any]) -> str:
    metadata = manifest["metadata"]
    return f"{manifest['kind']}/{metadata.get('namespace', '')}/{metadata['name']}"


def manifests_in(directory: Path) -> list[dict[str, Any]]:
    """The Kubernetes objects of a `colo render` manifests directory, in its file order (namespaces first)."""
    found: list[dict[str, Any]] = []
    for path in sorted(directory.glob("*.yaml")):
        found += [
            doc for doc in yaml.safe_load_all(path.read_text()) if isinstance(doc, dict) and "kind" in doc
        ]
    return found


def warnings_of(headers: Any) -> tuple[str, ...]:
    """The texts of the `Warning: 299 - "..."` headers (RFC 7234 form), however the client joined them."""
    raw = headers.getlist("Warning") if hasattr(headers, "getlist") else [headers.get("Warning")]
    return tuple(text for value in raw for text in WARNING.findall(value or ""))


class Api:
    def __init__(self, kubeconfig: Path) -> None:
        self.client = config.new_client_from_config(config_file=str(kubeconfig))
        self.dynamic = dynamic.DynamicClient(self.client)
        self.core = client.CoreV1Api(self.client)
        self.apps = client.AppsV1Api(self.client)

    def _path(self, manifest: dict[str, Any]) -> str:
        resource = self.dynamic.resources.get(api_version=manifest["apiVersion"], kind=manifest["kind"])
        namespace = manifest["metadata"].get("namespace") if resource.namespaced else None
        return str(resource.path(name=manifest["metadata"]["name"], namespace=namespace))

    def apply(self, manifest: dict[str, Any]) -> Applied:
        """Server-side apply of one object; ApiException when the server refuses it."""
        body, _, headers = self.client.call_api(
            self._path(manifest),
            "PATCH",
            query_params=[("fieldManager", FIELD_MANAGER), ("force", "true")],
            header_params={"Content-Type": "application/apply-patch+yaml", "Accept": "application/json"},
            body=manifest,
            auth_settings=["BearerToken"],
            _preload_content=False,
            _return_http_data_only=False,
        )
        return Applied(key_of(manifest), json.loads(body.data), warnings_of(headers))

    def apply_all(self, manifests: Iterable[dict[str, Any]]) -> ApplyResult:
        result = ApplyResult()
        for manifest in manifests:
            try:
                result.applied.append(self.apply(manifest))
            except ApiException as refused:
                message = json.loads(refused.body).get("message", "") if refused.body else str(refused.reason)
                result.refused.append(Refused(key_of(manifest), int(refused.status), message))
        return result

    def delete(self, manifest: dict[str, Any]) -> None:
        try:
            self.client.call_api(
                self._path(manifest),
                "DELETE",
                header_params={"Accept": "application/json"},
                auth_settings=["BearerToken"],
                _preload_content=False,
            )
        except ApiException as gone:
            if gone.status != 404:
                raise

    def exists(self, manifest: dict[str, Any]) -> bool:
        try:
            self.client.call_api(
                self._path(manifest),
                "GET",
                header_params={"Accept": "application/json"},
                auth_settings=["BearerToken"],
                _preload_content=False,
            )
        except ApiException as missing:
            if missing.status == 404:
                return False
            raise
        return True

    def get(self, manifest: dict[str, Any]) -> dict[str, Any]:
        body, _, _ = self.client.call_api(
            self._path(manifest),
            "GET",
            header_params={"Accept": "application/json"},
            auth_settings=["BearerToken"],
            _preload_content=False,
            _return_http_data_only=False,
        )
        return dict(json.loads(body.data))

    def list(
        self, api_version: str, kind: str, namespace: str | None = None, **query: str
    ) -> list[dict[str, Any]]:
        resource = self.dynamic.resources.get(api_version=api_version, kind=kind)
        found = resource.get(namespace=namespace, **query) if namespace else resource.get(**query)
        return [item.to_dict() for item in found.items]

    def delete_namespaces(self, names: Iterable[str], within: float = 120.0) -> None:
        """Delete namespaces and wait until they are gone (the namespace controller empties them first)."""
        names = list(names)
        for name in names:
            self.delete({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        wait_until(
            lambda: (
                not any(
                    self.exists({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
                    for name in names
                )
            ),
            within,
            f"namespaces {names} to be deleted",
        )


def wait_until(condition: Callable[[], T], within: float, what: str, every: float = 0.5) -> T:
    """The first truthy value of `condition`, polled until `within` seconds have passed."""
    deadline = time.monotonic() + within
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {within:.0f} s waiting for {what}")
        time.sleep(every)
