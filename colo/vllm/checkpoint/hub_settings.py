"""Where and how the Hugging Face Hub is reached: read from the environment when a model is read, as huggingface_hub
reads it (HF_ENDPOINT, HF_HOME, HF_HUB_CACHE, HF_HUB_OFFLINE, HF_TOKEN and the login token file).

huggingface_hub computes these once, when it is first imported (`huggingface_hub.constants`); colo reads them
again for every model so that a long-lived process (the Pulumi program, a test) follows the environment it has
now, and hands each to huggingface_hub explicitly. Proxies (HTTPS_PROXY, NO_PROXY) are the HTTP client's own.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

DEFAULT_ENDPOINT = "https://huggingface.co"
TRUE = {"1", "ON", "YES", "TRUE"}  # huggingface_hub.constants._is_true


def _expanded(value: str) -> Path:
    return Path(os.path.expandvars(os.path.expanduser(value)))


def _token_from_file(path: Path) -> str | None:
    try:
        token = path.read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None
    return token or None


@dataclass(frozen=True)
class HubSettings:
    endpoint: str  # no trailing slash
    home: Path  # HF_HOME: huggingface_hub's root, where colo keeps its own record of what it read
    cache_dir: Path  # HF_HUB_CACHE: huggingface_hub's file cache, which colo's downloads share with vLLM's
    offline: bool  # HF_HUB_OFFLINE: no request at all; everything from the caches
    token: str | None  # never shown in a message

    @classmethod
    def from_environment(
        cls, environ: Mapping[str, str] | None = None, *, token: str | None = None
    ) -> HubSettings:
        """`token` (a stack's colo:hfToken) wins over HF_TOKEN, which wins over `hf auth login`'s token file."""
        env = os.environ if environ is None else environ
        home = _expanded(
            env.get("HF_HOME")
            or os.path.join(env.get("XDG_CACHE_HOME") or os.path.join("~", ".cache"), "huggingface")
        )
        cache = _expanded(env.get("HF_HUB_CACHE") or env.get("HUGGINGFACE_HUB_CACHE") or str(home / "hub"))
        offline = (env.get("HF_HUB_OFFLINE") or env.get("TRANSFORMERS_OFFLINE") or "").upper() in TRUE
        token_path = _expanded(env.get("HF_TOKEN_PATH") or str(home / "token"))
        chosen = (
            token or env.get("HF_TOKEN") or env.get("HUGGING_FACE_HUB_TOKEN") or _token_from_file(token_path)
        )
        return cls(
            endpoint=(env.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/"),
            home=home,
            cache_dir=cache,
            offline=offline,
            token=chosen.strip() if chosen else None,
        )

    @property
    def record_dir(self) -> Path:
        """colo's record of repository listings and safetensors headers, which huggingface_hub does not cache."""
        return self.home / "colo" / "hub"

    def page(self, repo_id: str) -> str:
        return f"{self.endpoint}/{repo_id}"
