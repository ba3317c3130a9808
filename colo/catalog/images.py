"""The images vLLM users deploy and the build facts each ships, loaded from images.yaml.

`find_image("vllm/vllm-openai:v0.19.0")` answers the vLLM release and the `BuildFacts` (CUDA, PyTorch, NCCL,
Python, FlashInfer, MoE kernel packages) read from that image's build files; `pip_build(release)` answers the
same for a plain `pip install vllm==<release>`. A reference the catalog cannot vouch for raises: a moving tag
(`MovingImageTag`, saying what the tag is and whether it can be resolved to a release), a non-NVIDIA build
(`ExcludedImage`) or an image it does not know (`UnknownImage`, naming the build keys a stack must state). A
known image whose source leaves facts unstated reports them through `ImageBuild.missing_facts()`.
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources
from itertools import pairwise
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from colo.catalog.data import parse_yaml
from colo.catalog.releases import release_key

IMAGES_FILE = "images.yaml"
# A release tag names a final release (post releases included); an rc or dev tag is built from another tree.
_FINAL_RELEASE = re.compile(r"\d+(\.\d+)*(\.post\d+)?")

# A package fact: its version or git ref when the build installs it, False when the build files install none,
# None when the source does not say.
Package = str | Literal[False] | None


class ImagesFileError(Exception):
    """images.yaml does not match the models here; the message names the entry."""


class ImageLookupError(Exception):
    """An image reference the catalog cannot answer for."""


class UnknownImage(ImageLookupError):
    """Neither the catalog nor the stack says how this image is built."""

    def __init__(self, reference: str) -> None:
        keys = ", ".join(f"vllm.build.{key}" for key in BUILD_KEYS)
        super().__init__(
            f"image {reference!r} is not in colo's image catalog: state the vLLM release (vllm.version) and "
            f"its build facts ({keys}) in the stack, or use an image the catalog lists"
        )
        self.reference = reference


class MovingImageTag(ImageLookupError):
    """A tag that names no fixed release (latest, nightly, a major-version tag)."""

    def __init__(
        self,
        reference: str,
        meaning: str,
        action: Literal["resolve", "refuse"],
        today: str | None = None,
        since: str | None = None,
    ) -> None:
        if action == "refuse":
            advice = "it names no release colo mirrors; pin a release tag"
        elif today is not None:
            advice = f"since {since} it is {today}: pin that tag (or its digest)"
        else:
            advice = "pin the release tag it resolves to (or its digest)"
        super().__init__(f"image {reference!r} is a moving tag ({meaning}): {advice}")
        self.reference = reference
        self.meaning = meaning
        self.action = action
        self.today = today  # the pinned reference the tag names today, where the catalog says


class ExcludedImage(ImageLookupError):
    """A build for hardware colo does not plan (ROCm, CPU)."""

    def __init__(self, reference: str, reason: str) -> None:
        super().__init__(f"image {reference!r} is not sized by colo: {reason}")
        self.reference = reference


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class BuildFacts(_Strict):
    """What the memory budget reads from a build; None means the source does not say."""

    cuda: str | None = None
    python: str | None = None
    torch: str | None = None
    nccl: str | None = None  # the NCCL the process loads (PyTorch's pin unless the image overrides it)
    nccl_from: Literal["torch", "image"] | None = None
    flashinfer: Package = None  # decides the dummy sampler's top-k/top-p path (vllm-memory-rules.md §11)
    triton_kernels: Package = None
    deep_gemm: Package = None
    deep_ep: Package = None
    pplx_kernels: Package = None
    xformers: Package = None

    def missing(self) -> tuple[str, ...]:
        """The keys the source leaves unstated, in catalog order."""
        return tuple(key for key in BUILD_KEYS if getattr(self, key) is None)


BUILD_KEYS: tuple[str, ...] = tuple(BuildFacts.model_fields)


def _release(text: str, where: str) -> tuple[int, ...]:
    if not _FINAL_RELEASE.fullmatch(text):
        raise ValueError(f"{where}: {text!r} is not a vLLM release")
    return release_key(text)


class ReleaseRange(BuildFacts):
    """Releases first..last (inclusive) built alike."""

    first: str
    last: str
    commit: str | None = None  # short id in the release sdist's vllm/_version.py
    source: str

    @model_validator(mode="after")
    def _ordered(self) -> ReleaseRange:
        if _release(self.first, "first") > _release(self.last, "last"):
            raise ValueError(f"range {self.first}..{self.last} is reversed")
        return self

    def holds(self, release: tuple[int, ...]) -> bool:
        return release_key(self.first) <= release <= release_key(self.last)


class TaggedImage(BuildFacts):
    """One tag of a distribution's image."""

    tag: str
    vllm: str | None  # the upstream release it ships; None for a development build between releases
    vllm_build: str | None = None  # the version string the build itself reports, where it differs
    source: str


class Official(_Strict):
    name: str
    repositories: tuple[str, ...]
    tag: str  # "v{release}"
    ranges: tuple[ReleaseRange, ...]

    @model_validator(mode="after")
    def _disjoint(self) -> Official:
        _check_disjoint(self.ranges, self.name)
        return self


class Distribution(_Strict):
    name: str
    kind: Literal["image", "pip"]
    note: str
    repositories: tuple[str, ...] = ()
    images: tuple[TaggedImage, ...] = ()
    ranges: tuple[ReleaseRange, ...] = ()

    @model_validator(mode="after")
    def _shape(self) -> Distribution:
        if self.kind == "pip" and (self.images or self.repositories or not self.ranges):
            raise ValueError(f"{self.name}: a pip distribution has release ranges and no images")
        if self.kind == "image" and (self.ranges or not self.images or not self.repositories):
            raise ValueError(f"{self.name}: an image distribution has repositories and tagged images")
        _check_disjoint(self.ranges, self.name)
        return self


class MovingTag(_Strict):
    repositories: tuple[str, ...]
    tag: str
    meaning: str
    action: Literal["resolve", "refuse"]
    names: str | None = None  # the release the tag names today (a resolvable tag only)
    since: str | None = None  # the date it has named it since
    names_source: str | None = None

    @model_validator(mode="after")
    def _names_with_its_date_and_source(self) -> MovingTag:
        if self.names is not None and (self.action != "resolve" or not (self.since and self.names_source)):
            raise ValueError(
                f"moving tag {self.tag}: `names` needs action resolve, `since` and `names_source`"
            )
        return self


class Excluded(_Strict):
    repositories: tuple[str, ...]
    tag_suffix: str | None = None  # excluded only when the tag ends so; None: every tag
    reason: str


class ImageCatalog(_Strict):
    official: Official
    moving_tags: tuple[MovingTag, ...]
    distributions: tuple[Distribution, ...]
    excluded: tuple[Excluded, ...]


class ImageBuild(_Strict):
    """What the catalog knows about one image reference or pip install."""

    reference: str
    distribution: str
    vllm: str | None
    build: BuildFacts
    source: str

    def missing_facts(self) -> tuple[str, ...]:
        """Keys a stack must state before colo can size this build (the release first, if unknown)."""
        return (("version",) if self.vllm is None else ()) + self.build.missing()


def _check_disjoint(ranges: tuple[ReleaseRange, ...], name: str) -> None:
    ordered = sorted(ranges, key=lambda r: release_key(r.first))
    for before, after in pairwise(ordered):
        if release_key(after.first) <= release_key(before.last):
            raise ValueError(f"{name}: ranges {before.first}..{before.last} and {after.first}.. overlap")


def _facts(entry: BuildFacts) -> BuildFacts:
    return BuildFacts(**{key: getattr(entry, key) for key in BUILD_KEYS})


def split_reference(reference: str) -> tuple[str, str | None]:
    """(repository, tag) of an image reference; a reference by digest alone has no tag (`name:tag@digest` keeps
    its tag). The default tag `latest` is made explicit, as Docker does."""
    named, digest, _ = reference.partition("@")
    if digest:
        head, sep, tail = named.rpartition(":")
        return (head, tail) if sep and "/" not in tail else (named, None)
    head, sep, tail = reference.rpartition(":")
    if sep and "/" not in tail:
        return head, tail
    return reference, "latest"


def parse_catalog(data: Any) -> ImageCatalog:
    try:
        return ImageCatalog.model_validate(data)
    except ValidationError as exc:
        raise ImagesFileError(f"{IMAGES_FILE}: {exc}") from exc


@cache
def load_catalog() -> ImageCatalog:
    text = resources.files("colo.catalog").joinpath(IMAGES_FILE).read_text(encoding="utf-8")
    return parse_catalog(parse_yaml(text))


def _in_range(ranges: tuple[ReleaseRange, ...], release: str) -> ReleaseRange | None:
    if not _FINAL_RELEASE.fullmatch(release):
        return None
    key = release_key(release)
    return next((r for r in ranges if r.holds(key)), None)


def official_build(release: str, catalog: ImageCatalog | None = None) -> ImageBuild | None:
    """The vLLM project's image of `release`, or None when the catalog has no range for it."""
    official = (catalog or load_catalog()).official
    found = _in_range(official.ranges, release)
    if found is None:
        return None
    reference = f"{official.repositories[0]}:{official.tag.format(release=release)}"
    return ImageBuild(
        reference=reference,
        distribution=official.name,
        vllm=release,
        build=_facts(found),
        source=found.source,
    )


def pip_build(release: str, catalog: ImageCatalog | None = None) -> ImageBuild | None:
    """`pip install vllm==<release>` into another environment, or None when the catalog has no range."""
    for dist in (catalog or load_catalog()).distributions:
        if dist.kind == "pip" and (found := _in_range(dist.ranges, release)) is not None:
            return ImageBuild(
                reference=f"pip:vllm=={release}",
                distribution=dist.name,
                vllm=release,
                build=_facts(found),
                source=found.source,
            )
    return None


def _refuse_unsized(catalog: ImageCatalog, reference: str, repository: str, tag: str | None) -> None:
    """Raise for a build colo never sizes or a tag that names no fixed release."""
    for excluded in catalog.excluded:
        suffix_matches = excluded.tag_suffix is None or (tag or "").endswith(excluded.tag_suffix)
        if repository in excluded.repositories and suffix_matches:
            raise ExcludedImage(reference, excluded.reason)
    for moving in catalog.moving_tags:
        if repository in moving.repositories and tag == moving.tag:
            today = None
            if moving.names is not None:
                pinned = catalog.official.tag.format(release=moving.names)
                today = f"{repository}:{pinned}"
            raise MovingImageTag(reference, moving.meaning, moving.action, today, moving.since)


def _official_tag(catalog: ImageCatalog, repository: str, tag: str) -> ImageBuild | None:
    official = catalog.official
    prefix = official.tag.split("{release}", 1)[0]
    if repository not in official.repositories or not tag.startswith(prefix):
        return None
    return official_build(tag[len(prefix) :], catalog)


def _distribution_tag(catalog: ImageCatalog, reference: str, repository: str, tag: str) -> ImageBuild | None:
    for dist in catalog.distributions:
        image = (
            next((i for i in dist.images if i.tag == tag), None) if repository in dist.repositories else None
        )
        if image is not None:
            return ImageBuild(
                reference=reference,
                distribution=dist.name,
                vllm=image.vllm,
                build=_facts(image),
                source=image.source,
            )
    return None


def find_image(
    reference: str, catalog: ImageCatalog | None = None, *, stated_release: str | None = None
) -> ImageBuild:
    """The build behind an image reference; raises `ImageLookupError` when the catalog cannot vouch for it.

    A reference by digest alone names no release, so the catalog cannot place it, except for the official
    repository given `stated_release` (the stack's vllm.version): a digest of the vLLM project's image is
    one of its release builds (pinning by digest is what supply-chain guidance asks for), so that release's
    build facts apply. Which release the digest holds is the stack's word; colo cannot read it offline."""
    catalog = catalog or load_catalog()
    repository, tag = split_reference(reference)
    _refuse_unsized(catalog, reference, repository, tag)
    if tag is None and stated_release is not None and repository in catalog.official.repositories:
        official = official_build(stated_release, catalog)
        if official is not None:
            return official.model_copy(update={"reference": reference})
    if tag is None:
        raise UnknownImage(reference)  # a digest: the catalog lists tags, so the stack must say what it is
    official = _official_tag(catalog, repository, tag)
    if official is not None:
        return official.model_copy(update={"reference": reference})
    found = _distribution_tag(catalog, reference, repository, tag)
    if found is None:
        raise UnknownImage(reference)
    return found
