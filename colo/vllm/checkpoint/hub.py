"""A model named by its Hugging Face Hub id, read file by file as vLLM reads it, never its weights.

vLLM resolves a Hub id with huggingface_hub: config.json (and, where the repository has them, the quantization
blocks `hf_quant_config.json` and `quantize_config.json`, a sentence-transformers model's
`sentence_bert_config.json` and the pooling its `modules.json` names, a vision model's `preprocessor_config.json`
and `video_preprocessor_config.json`), all at one revision. colo reads the same files with the same library and cache, and the exact tensor bytes from the
safetensors headers, fetched by HTTP range requests (the first bytes of each shard), as
`huggingface_hub.HfApi.parse_safetensors_file_metadata` does.

A revision (branch, tag or commit) is resolved to a commit once per read; everything else is read at that commit,
so one plan never mixes two states of a repository. Files, listings and headers are cached: a commit read once is
read again with no request, also offline (HF_HUB_OFFLINE=1), and a Hub that cannot be reached falls back to what
the revision pointed to when last read. Every failure is a HubError whose message is one sentence with the fix.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from colo.files import read_bounded
from colo.vllm.checkpoint.architecture import ModelArchitecture
from colo.vllm.checkpoint.files import (
    MAX_CONFIG_BYTES,
    from_checkpoint_files,
    parse_config_json,
    tensor_bytes,
    with_tensor_bytes,
    with_total_size,
)
from colo.vllm.checkpoint.hub_record import HubRecord, Listing
from colo.vllm.checkpoint.hub_settings import HubSettings
from colo.vllm.checkpoint.safetensors import INDEX_FILE, MAX_INDEX_BYTES

# The way round the Hub, in the words of both places a model is named: a stack and `colo estimate`.
LOCAL_CONFIG_FIX = (
    "size it from a local config.json instead (a server's `profile`, or `colo estimate --model PATH`)"
)

CONFIG_FILE = "config.json"
SINGLE_FILE = "model.safetensors"
DEFAULT_REVISION = "main"
COMMIT = re.compile(r"[0-9a-f]{40}")  # a revision that is a commit names the same files forever
T = TypeVar("T")


class HubError(Exception):
    """The model cannot be read from the Hub; the message is one sentence that says why and what to do.
    `about` names what the user should look at: the model id, or the revision it was asked at."""

    def __init__(self, message: str, about: str = "model") -> None:
        super().__init__(message)
        self.about = about


@dataclass(frozen=True)
class HubModel:
    repo_id: str  # the Hub's own spelling (ids are case-insensitive on the Hub)
    revision: str | None  # as the user pinned it; None: the repository's main branch
    commit: str
    arch: ModelArchitecture
    gated: bool = False  # the Hub asks for an accepted licence and a token before serving its files
    notes: tuple[str, ...] = field(default=())  # what colo had to fall back on, for the plan to say

    @property
    def pinned(self) -> bool:
        return self.revision is not None


def _sentence(settings: HubSettings, repo_id: str, revision: str, exc: Exception) -> str:
    """One sentence for each way huggingface_hub reports a failure."""
    from huggingface_hub.errors import (
        GatedRepoError,
        HfHubHTTPError,
        HFValidationError,
        LocalEntryNotFoundError,
        OfflineModeIsEnabled,
        RemoteEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    page = settings.page(repo_id)
    status = getattr(getattr(exc, "response", None), "status_code", None)
    if isinstance(exc, HFValidationError):
        return (
            f"'{repo_id}' is not a Hugging Face repository id ('organisation/name'), nor a file colo can read"
        )
    if isinstance(exc, GatedRepoError):
        if settings.token and status == 403:
            return (
                f"the Hugging Face token has no access to {repo_id}, which is gated: accept its licence at {page} "
                "with the token's account (a fine-grained token also needs access to public gated repositories)"
            )
        return (
            f"{repo_id} is gated on the Hugging Face Hub and no token was given: accept its licence at {page}, then "
            "set HF_TOKEN for colo plan and colo estimate and `pulumi config set --secret hfToken hf_...` for the "
            "stack's servers"
        )
    if isinstance(exc, RevisionNotFoundError):
        return f"{repo_id} has no revision '{revision}' on the Hub (a branch, a tag or a commit of {page})"
    if isinstance(exc, RemoteEntryNotFoundError):
        return (
            f"{repo_id} at revision '{revision}' lacks a file the Hub listed: {exc.args[0].splitlines()[-1]}"
        )
    if isinstance(exc, RepositoryNotFoundError):
        hint = "the token given may not see it" if settings.token else "if it is private, set HF_TOKEN"
        return f"{repo_id} is not a model repository on the Hub at {settings.endpoint} ({hint}); check the id"
    if isinstance(exc, OfflineModeIsEnabled | LocalEntryNotFoundError) or settings.offline:
        return (
            f"HF_HUB_OFFLINE is set and {repo_id} at revision '{revision}' is not in the cache "
            f"({settings.cache_dir}): read it once with the Hub reachable, or unset HF_HUB_OFFLINE"
        )
    if isinstance(exc, HfHubHTTPError) and status == 401:
        return f"the Hub at {settings.endpoint} refused the token (401): check HF_TOKEN or colo:hfToken"
    if isinstance(exc, HfHubHTTPError):
        return (
            f"the Hub at {settings.endpoint} answered {status} for {repo_id}: {exc.args[0].splitlines()[0]}"
        )
    return (
        f"cannot reach the Hugging Face Hub at {settings.endpoint} ({type(exc).__name__}) and {repo_id} at revision "
        f"'{revision}' is not in the cache ({settings.cache_dir}): read it once with the Hub reachable (set "
        f"HF_ENDPOINT for a mirror, and HTTPS_PROXY where one is needed), or {LOCAL_CONFIG_FIX}"
    )


def _unreachable(exc: Exception) -> bool:
    """A failure to reach the Hub at all (no route, refused, timed out, offline), after which the cache may answer;
    the Hub's own refusal is not one."""
    import httpx2  # huggingface_hub's HTTP client
    from huggingface_hub.errors import HfHubHTTPError, OfflineModeIsEnabled

    if isinstance(exc, HfHubHTTPError):
        return False
    return isinstance(
        exc, OfflineModeIsEnabled | httpx2.TransportError | ConnectionError | TimeoutError | OSError
    )


class _Reader:
    """One read of one repository at one revision."""

    def __init__(self, repo_id: str, revision: str | None, settings: HubSettings) -> None:
        from huggingface_hub import HfApi

        self.asked = repo_id
        self.revision = revision or DEFAULT_REVISION
        self.settings = settings
        self.record = HubRecord(settings.record_dir)
        self.api = HfApi(endpoint=settings.endpoint, token=settings.token or False)
        self.notes: list[str] = []

    def _refusal(self, repo_id: str, exc: Exception) -> HubError:
        from huggingface_hub.errors import RevisionNotFoundError

        about = "revision" if isinstance(exc, RevisionNotFoundError) else "model"
        return HubError(_sentence(self.settings, repo_id, self.revision, exc), about)

    def _call(self, repo_id: str, step: Callable[[], T]) -> T:
        try:
            return step()
        except HubError:
            raise
        except Exception as exc:  # huggingface_hub's and its HTTP client's errors, named in one sentence
            raise self._refusal(repo_id, exc) from None

    def listing(self) -> Listing:
        """The commit the revision points to now, its files, and the id as the Hub spells it."""
        pinned = COMMIT.fullmatch(self.revision) is not None
        cached = self.revision if pinned else self.record.commit_of(self.asked, self.revision)
        known = self.record.listing(self.asked, cached) if cached else None
        if known is not None and (self.settings.offline or known.commit == self.revision):
            return known  # a commit never changes; offline, the last listing is all there is
        if self.settings.offline:
            raise HubError(_sentence(self.settings, self.asked, self.revision, OSError("offline")))
        try:
            info = self.api.model_info(self.asked, revision=self.revision)
        except Exception as exc:
            if known is not None and _unreachable(exc):
                self.notes.append(
                    f"the Hub could not be reached ({type(exc).__name__}): read {known.repo_id} at {known.commit}, "
                    f"where '{self.revision}' pointed when colo last read it"
                )
                return known
            raise self._refusal(self.asked, exc) from None
        files = tuple(sorted(s.rfilename for s in info.siblings or ()))
        listing = Listing(str(info.id), str(info.sha), files, bool(info.gated))
        self.record.remember(self.asked, self.revision, listing)
        return listing

    def read_json(self, listing: Listing, filename: str, limit: int) -> Any:
        """One small file at the listing's commit: from the cache, else downloaded once (its size checked first)."""
        from huggingface_hub import get_hf_file_metadata, hf_hub_download, hf_hub_url, try_to_load_from_cache

        cached = try_to_load_from_cache(
            listing.repo_id, filename, cache_dir=self.settings.cache_dir, revision=listing.commit
        )
        if isinstance(cached, str):
            path = cached
        elif self.settings.offline:
            raise HubError(_sentence(self.settings, listing.repo_id, self.revision, OSError("offline")))
        else:
            url = hf_hub_url(
                listing.repo_id, filename, revision=listing.commit, endpoint=self.settings.endpoint
            )
            size = self._call(
                listing.repo_id, lambda: get_hf_file_metadata(url, token=self.settings.token or False)
            )
            if size.size is not None and size.size > limit:
                raise HubError(
                    f"{listing.repo_id}'s {filename} is {size.size} bytes, larger than any real one"
                )
            path = self._call(
                listing.repo_id,
                lambda: hf_hub_download(
                    listing.repo_id,
                    filename,
                    revision=listing.commit,
                    cache_dir=self.settings.cache_dir,
                    token=self.settings.token or False,
                    endpoint=self.settings.endpoint,
                ),
            )
        try:
            return parse_config_json(read_bounded(Path(path), limit))
        except ValueError as exc:
            raise HubError(f"{listing.repo_id}'s {filename} at {listing.commit} is not JSON: {exc}") from None

    def headers(self, listing: Listing, index: Mapping[str, Any] | None) -> list[dict[str, Any]] | None:
        """Every shard's safetensors header, by range requests; None where the checkpoint has none or they cannot be
        read (the index's total then stands for the exact bytes, and the plan says so)."""
        known = self.record.headers(listing)
        if isinstance(known, str):
            self.notes.append(known)
        if known is not None:
            return None if isinstance(known, str) else known
        weight_map = (index or {}).get("weight_map", {})
        shards = [SINGLE_FILE] if SINGLE_FILE in listing.files else sorted(set(weight_map.values()))
        if not shards or self.settings.offline:
            return None
        headers = []
        for shard in shards:
            try:
                parsed = self.api.parse_safetensors_file_metadata(
                    listing.repo_id, shard, revision=listing.commit
                )
            except Exception as exc:
                why = (
                    f"the safetensors header of {shard} could not be read ({type(exc).__name__}): weights are "
                    + ("the index's exact total" if index else "computed from config.json")
                )
                self.notes.append(why)
                if not _unreachable(exc):  # the Hub's own answer for this commit: it will not change
                    self.record.remember_headers(listing, why)
                return None
            headers.append(
                {
                    name: {"dtype": t.dtype, "shape": list(t.shape), "data_offsets": list(t.data_offsets)}
                    for name, t in parsed.tensors.items()
                }
            )
        self.record.remember_headers(listing, headers)
        return headers


def _refuse_unreadable(listing: Listing) -> None:
    if CONFIG_FILE in listing.files:
        return
    ggufs = [name for name in listing.files if name.endswith(".gguf")]
    if ggufs:
        raise HubError(
            f"{listing.repo_id} holds GGUF files only ({', '.join(ggufs[:3])}{', ...' if len(ggufs) > 3 else ''}) "
            "and no config.json: colo sizes a checkpoint from its config.json, as vLLM reads a Transformers "
            f"checkpoint; name the original repository the GGUF was made from, or {LOCAL_CONFIG_FIX}"
        )
    raise HubError(
        f"{listing.repo_id} at {listing.commit} has no config.json, so vLLM cannot load it as a model: check the id "
        "and the revision"
    )


def _architecture(reader: _Reader, listing: Listing) -> ModelArchitecture:
    raw = reader.read_json(listing, CONFIG_FILE, MAX_CONFIG_BYTES)

    def has(name: str) -> bool:
        return name in listing.files

    def read(name: str) -> Any:
        return reader.read_json(listing, name, MAX_CONFIG_BYTES)

    source = f"{reader.settings.page(listing.repo_id)} at commit {listing.commit}"
    try:  # the files' reads raise HubError themselves (read_json), a config of the wrong shape ValueError
        arch = from_checkpoint_files(raw, listing.repo_id, source, has, read)
    except ValueError as exc:
        raise HubError(f"{listing.repo_id}: {exc}") from None
    index = reader.read_json(listing, INDEX_FILE, MAX_INDEX_BYTES) if INDEX_FILE in listing.files else None
    headers = reader.headers(listing, index)
    if headers:
        try:
            return with_tensor_bytes(arch, tensor_bytes(headers, arch.num_layers, source))
        except ValueError as exc:
            raise HubError(str(exc)) from None
    total = (index or {}).get("metadata", {}).get("total_size") if isinstance(index, dict) else None
    return with_total_size(arch, int(total)) if isinstance(total, int) else arch


@functools.lru_cache(maxsize=256)
def _read(repo_id: str, revision: str | None, settings: HubSettings) -> HubModel:
    reader = _Reader(repo_id, revision, settings)
    listing = reader.listing()
    _refuse_unreadable(listing)
    arch = _architecture(reader, listing)
    return HubModel(listing.repo_id, revision, listing.commit, arch, listing.gated, tuple(reader.notes))


def read_hub_model(
    repo_id: str,
    revision: str | None = None,
    *,
    token: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> HubModel:
    """The model `repo_id` at `revision` (None: main), as vLLM would read it; HubError with the reason otherwise.
    Reads within one process are answered once per repository, revision and environment."""
    return _read(repo_id, revision, HubSettings.from_environment(environ, token=token))
