"""A picture of one GPU's memory: each process's parts in start order, then the safety margin and what is free.

Pure drawing: a GpuBar (plain numbers, built from a plan by colo.plan.budget_bars) becomes terminal text or
an SVG document. The terminal bar fills a given width exactly, every character standing for an equal share
of the GPU (largest-remainder rounding, so the characters of all parts add up to the width); a part too small
for one character still appears in the legend with its figure. The SVG is built as text through a small
builder that escapes every string it writes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from math import floor
from typing import Literal
from xml.sax.saxutils import escape, quoteattr

GIB = 1024**3

Kind = Literal["context", "weights", "activation", "graphs", "non_torch", "kv", "other", "margin", "free"]


@dataclass(frozen=True)
class Style:
    label: str
    glyph: str  # one terminal cell when stdout can print Unicode
    ascii: str  # one terminal cell otherwise
    colour: str  # the SVG fill


# In the order a process's memory is laid out in the bar; margin and free close the GPU.
STYLES: dict[Kind, Style] = {
    "context": Style("CUDA context", "▚", "c", "#6b7280"),
    "weights": Style("weights", "█", "W", "#1d4ed8"),
    "activation": Style("activation peak", "▓", "a", "#f59e0b"),
    "graphs": Style("CUDA graphs", "▞", "g", "#7c3aed"),
    "non_torch": Style("non-torch", "▘", "n", "#db2777"),
    "kv": Style("KV cache", "▒", "K", "#16a34a"),
    "other": Style("held after startup", "▗", "o", "#0891b2"),
    "margin": Style("safety margin", "░", "m", "#fca5a5"),
    "free": Style("free", "·", ".", "#f3f4f6"),
}
PROCESS_KINDS: tuple[Kind, ...] = ("context", "weights", "activation", "graphs", "non_torch", "kv", "other")


@dataclass(frozen=True)
class Segment:
    kind: Kind
    bytes: int


@dataclass(frozen=True)
class ProcessBar:
    name: str
    segments: tuple[Segment, ...]

    @property
    def bytes(self) -> int:
        return sum(segment.bytes for segment in self.segments)


@dataclass(frozen=True)
class GpuBar:
    title: str  # "GPU 0 of node 0 (L40S)"
    total_bytes: int  # what CUDA reports
    processes: tuple[ProcessBar, ...]  # in start order
    margin_bytes: int  # the safety margin the plan keeps free
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def used_bytes(self) -> int:
        return sum(process.bytes for process in self.processes)

    @property
    def free_bytes(self) -> int:
        """Free beyond the safety margin; negative when the processes eat into the margin or beyond."""
        return self.total_bytes - self.used_bytes - self.margin_bytes

    @property
    def span_bytes(self) -> int:
        """What the bar spans: the GPU, or more when the plan does not fit on it."""
        return max(self.total_bytes, self.used_bytes + self.margin_bytes)

    def parts(self) -> list[tuple[int | None, Segment]]:
        """Every part left to right: (process index, segment) for a process's, (None, ...) for margin and free."""
        found: list[tuple[int | None, Segment]] = [
            (index, segment)
            for index, process in enumerate(self.processes)
            for segment in process.segments
            if segment.bytes > 0
        ]
        room = self.total_bytes - self.used_bytes  # margin and free share what the processes leave
        margin = min(self.margin_bytes, max(room, 0))
        if margin:
            found.append((None, Segment("margin", margin)))
        if room - margin > 0:
            found.append((None, Segment("free", room - margin)))
        return found


def gib(value: int) -> str:
    return f"{value / GIB:.2f}"


def hundredths_of_gib(sizes: list[int]) -> list[str]:
    """Sizes in GiB to two decimals that add up to their rounded total, as a table's columns should."""
    total = round(sum(sizes) / GIB * 100)
    return [f"{share / 100:.2f}" for share in cells(sizes, total)]


def cells(sizes: list[int], width: int) -> list[int]:
    """Split `width` cells over `sizes` in proportion, by largest remainder: the cells add up to `width`."""
    total = sum(sizes)
    if total <= 0 or width <= 0:
        return [0] * len(sizes)
    exact = [size * width / total for size in sizes]
    whole = [floor(share) for share in exact]
    spare = width - sum(whole)
    by_remainder = sorted(range(len(sizes)), key=lambda i: (exact[i] - whole[i], sizes[i]), reverse=True)
    for index in by_remainder[:spare]:
        whole[index] += 1
    return whole


def _ruler(spans: list[tuple[int, int, str]], width: int, unicode: bool) -> str:
    """A line under the bar naming each process over its cells: └─1 name─┘, shortened to fit."""
    left, fill, right = ("└", "─", "┘") if unicode else ("\\", "_", "/")
    line = [" "] * width
    for start, length, label in spans:
        if length <= 0:
            continue
        number = label.split(" ", 1)[0]
        for text in (f" {label} ", label, number):
            if len(text) + 2 <= length:
                inner = text.center(length - 2, fill)
                drawn = left + inner + right
                break
        else:
            drawn = number[:length]
        line[start : start + length] = list(drawn)
    return "".join(line).rstrip()


def _state(bar: GpuBar) -> str:
    """The title's figures: total, used, the margin where there is one, and what is left or missing."""
    margin = f", safety margin {gib(bar.margin_bytes)}" if bar.margin_bytes else ""
    left = (
        f"free {gib(bar.free_bytes)} GiB{' beyond the margin' if bar.margin_bytes else ''}"
        if bar.free_bytes >= 0
        else f"OVER by {gib(-bar.free_bytes)} GiB{' (margin included)' if bar.margin_bytes else ''}"
    )
    return f"{gib(bar.total_bytes)} GiB; used {gib(bar.used_bytes)}{margin}, {left}"


def _mark(kind: Kind, unicode: bool) -> str:
    return STYLES[kind].glyph if unicode else STYLES[kind].ascii


def _wrapped(items: list[str], width: int) -> list[str]:
    """Items two spaces apart, as many to a line as `width` holds (at least one)."""
    lines: list[str] = []
    for item in items:
        if lines and len(lines[-1]) + 2 + len(item) <= width:
            lines[-1] += "  " + item
        else:
            lines.append(item)
    return lines


def terminal_lines(bar: GpuBar, width: int, *, unicode: bool = True) -> list[str]:
    """The bar, `width` cells wide, with the processes named under it and a legend of every part's figure."""
    parts = bar.parts()
    widths = cells([segment.bytes for _, segment in parts], width)
    glyph = [_mark(segment.kind, unicode) for _, segment in parts]
    drawn = "".join(g * n for g, n in zip(glyph, widths, strict=True))
    spans: list[tuple[int, int, str]] = []
    position = 0
    for index, process in enumerate(bar.processes):
        length = sum(n for (owner, _), n in zip(parts, widths, strict=True) if owner == index)
        spans.append((position, length, f"{index + 1} {process.name}"))
        position += length
    lines = [f"{bar.title}: {_state(bar)}", drawn, _ruler(spans, width, unicode)]
    if bar.total_bytes < bar.span_bytes:  # over-full: show where the GPU ends
        end = cells([bar.total_bytes, bar.span_bytes - bar.total_bytes], width)[0]
        lines.append(" " * max(end - 1, 0) + f"^ the GPU ends here ({gib(bar.total_bytes)} GiB)")
    name_width = max((len(p.name) for p in bar.processes), default=0)
    for index, process in enumerate(bar.processes):
        shares = hundredths_of_gib([s.bytes for s in process.segments])
        figures = "  ".join(
            f"{_mark(s.kind, unicode)} {share:>5}" for s, share in zip(process.segments, shares, strict=True)
        )
        lines.append(f"{index + 1} {process.name.ljust(name_width)} {gib(process.bytes):>6} GiB  {figures}")
    lines += _wrapped([f"{_mark(kind, unicode)} {STYLES[kind].label}" for kind in STYLES], width)
    lines += [f"note: {note}" for note in bar.notes]
    return lines


class Svg:
    """A small SVG builder: every attribute and text goes through XML escaping."""

    def __init__(self, width: int, height: int, title: str) -> None:
        self.width, self.height = width, height
        self._body: list[str] = [f"<title>{escape(title)}</title>"]

    def rect(self, x: float, y: float, width: float, height: float, fill: str, tooltip: str = "") -> None:
        tip = f"<title>{escape(tooltip)}</title>" if tooltip else ""
        self._body.append(
            f"<rect x={quoteattr(f'{x:.2f}')} y={quoteattr(f'{y:.2f}')} width={quoteattr(f'{width:.2f}')} "
            f"height={quoteattr(f'{height:.2f}')} fill={quoteattr(fill)}>{tip}</rect>"
        )

    def line(self, x1: float, y1: float, x2: float, y2: float, stroke: str = "#111827") -> None:
        self._body.append(
            f"<line x1={quoteattr(f'{x1:.2f}')} y1={quoteattr(f'{y1:.2f}')} x2={quoteattr(f'{x2:.2f}')} "
            f"y2={quoteattr(f'{y2:.2f}')} stroke={quoteattr(stroke)} stroke-width='2'/>"
        )

    def text(self, x: float, y: float, content: str, *, size: int = 12, anchor: str = "start") -> None:
        self._body.append(
            f"<text x={quoteattr(f'{x:.2f}')} y={quoteattr(f'{y:.2f}')} font-size={quoteattr(str(size))} "
            f"text-anchor={quoteattr(anchor)}>{escape(content)}</text>"
        )

    def document(self) -> str:
        head = (
            f"<svg xmlns='http://www.w3.org/2000/svg' width='{self.width}' height='{self.height}' "
            f"viewBox='0 0 {self.width} {self.height}' font-family='sans-serif'>"
        )
        return "\n".join([head, *self._body, "</svg>"]) + "\n"


SVG_WIDTH = 900
_PAD = 12
_BAR_TOP = 40
_BAR_HEIGHT = 44
_ROW = 18


def svg(bar: GpuBar) -> str:
    """The same picture as an SVG document: one rectangle per part (its figure as a tooltip), a tick between
    processes with their names under the bar, and a legend line per process."""
    parts = bar.parts()
    inner = SVG_WIDTH - 2 * _PAD
    scale = inner / bar.span_bytes if bar.span_bytes else 0.0
    legend_rows = len(bar.processes) + 2 + len(bar.notes)
    height = _BAR_TOP + _BAR_HEIGHT + 26 + legend_rows * _ROW + _PAD
    picture = Svg(SVG_WIDTH, height, f"{bar.title}: memory budget")
    picture.text(_PAD, 24, f"{bar.title}: {_state(bar)}", size=14)
    x = float(_PAD)
    starts: dict[int, float] = {}
    ends: dict[int, float] = {}
    for owner, segment in parts:
        width = segment.bytes * scale
        who = bar.processes[owner].name + ": " if owner is not None else ""
        picture.rect(
            x,
            _BAR_TOP,
            width,
            _BAR_HEIGHT,
            STYLES[segment.kind].colour,
            f"{who}{STYLES[segment.kind].label} {gib(segment.bytes)} GiB",
        )
        if owner is not None:
            starts.setdefault(owner, x)
            ends[owner] = x + width
        x += width
    if bar.total_bytes < bar.span_bytes:  # where the GPU ends, inside an over-full bar
        end = _PAD + bar.total_bytes * scale
        picture.line(end, _BAR_TOP - 6, end, _BAR_TOP + _BAR_HEIGHT + 6, stroke="#dc2626")
    label_y = _BAR_TOP + _BAR_HEIGHT + 16
    for index, process in enumerate(bar.processes):
        start, end = starts.get(index, x), ends.get(index, x)
        picture.line(start, _BAR_TOP, start, _BAR_TOP + _BAR_HEIGHT)
        picture.text((start + end) / 2, label_y, f"{index + 1} {process.name}", size=11, anchor="middle")
    y = label_y + 10
    for index, process in enumerate(bar.processes):
        y += _ROW
        figures = ", ".join(f"{STYLES[s.kind].label} {gib(s.bytes)}" for s in process.segments)
        picture.text(_PAD, y, f"{index + 1} {process.name}: {gib(process.bytes)} GiB = {figures}", size=11)
    y += _ROW
    swatch_x = float(_PAD)
    for kind in (*PROCESS_KINDS, "margin", "free"):
        style = STYLES[kind]
        step = 14 + 7 * len(style.label) + 12  # a swatch, its label (about 7 px a character), a gap
        if swatch_x + step > SVG_WIDTH - _PAD:  # the legend wraps rather than run off the picture
            swatch_x, y = float(_PAD), y + _ROW
        picture.rect(swatch_x, y - 10, 10, 10, style.colour)
        picture.text(swatch_x + 14, y, style.label, size=11)
        swatch_x += step
    for note in bar.notes:
        y += _ROW
        picture.text(_PAD, y, f"note: {note}", size=11)
    return picture.document()
