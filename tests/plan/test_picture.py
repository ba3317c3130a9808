"""The picture of a GPU's budget: its parts add up to the GPU, every part is named, it fits the width given,
falls back to ASCII, and its SVG is well-formed with every text escaped."""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree

import pytest
from hypothesis import given
from hypothesis import strategies as st

from colo.cli.common import load_config
from colo.plan.budget_bars import gpu_bar, process_parts
from colo.plan.picture import (
    GIB,
    PROCESS_KINDS,
    STYLES,
    GpuBar,
    ProcessBar,
    Segment,
    cells,
    hundredths_of_gib,
    svg,
    terminal_lines,
)
from colo.plan.stack import make_plan
from colo.stackfiles import list_stacks, load_stack

SVG = "{http://www.w3.org/2000/svg}"


def _bars(stack: str) -> list[GpuBar]:
    return [gpu_bar(pair) for pair in make_plan(load_config(load_stack(stack))).pairs]


@pytest.fixture(scope="module")
def prod() -> list[GpuBar]:
    return _bars("prod")


def test_each_process_is_split_into_parts_that_add_up_to_its_footprint() -> None:
    for stack in list_stacks():
        for pair in make_plan(load_config(load_stack(stack))).pairs:
            for server in pair.servers:
                budget = server.memory_plan.budget
                assert sum(process_parts(budget).values()) == budget.footprint_bytes, server.name


def test_the_parts_of_a_gpu_add_up_to_the_gpu_total(prod: list[GpuBar]) -> None:
    for bar in prod:
        assert sum(segment.bytes for _, segment in bar.parts()) == bar.total_bytes
        assert bar.used_bytes + bar.margin_bytes + bar.free_bytes == bar.total_bytes


@pytest.mark.parametrize("width", [40, 80, 137])
def test_the_terminal_bar_fills_exactly_the_width_given(prod: list[GpuBar], width: int) -> None:
    for bar in prod:
        lines = terminal_lines(bar, width)
        assert len(lines[1]) == width
        assert all(len(line) <= width for line in lines[2:3])


def test_every_part_is_named_in_the_legend_and_every_process_under_its_bar(prod: list[GpuBar]) -> None:
    text = "\n".join(terminal_lines(prod[0], 120))
    for kind in (*PROCESS_KINDS, "margin", "free"):
        assert f"{STYLES[kind].glyph} {STYLES[kind].label}" in text
    for index, process in enumerate(prod[0].processes):
        assert f"{index + 1} {process.name}" in text


def test_without_utf8_the_picture_is_plain_ascii(prod: list[GpuBar]) -> None:
    text = "\n".join(terminal_lines(prod[0], 80, unicode=False))
    assert text.isascii()
    assert f"{STYLES['weights'].ascii} weights" in text


def test_a_plan_that_does_not_fit_shows_where_the_gpu_ends() -> None:
    over = GpuBar("GPU 0", 10 * GIB, (ProcessBar("big", (Segment("weights", 12 * GIB),)),), GIB)
    lines = terminal_lines(over, 60)
    assert "OVER by 3.00 GiB" in lines[0]
    assert "^ the GPU ends here (10.00 GiB)" in lines[3]
    assert len(lines[1]) == 60


@given(st.lists(st.integers(min_value=0, max_value=10**12), min_size=1, max_size=12), st.integers(1, 300))
def test_cells_are_shared_in_proportion_and_add_up_to_the_width(sizes: list[int], width: int) -> None:
    shares = cells(sizes, width)
    if sum(sizes) == 0:
        assert shares == [0] * len(sizes)
        return
    assert sum(shares) == width
    for size, share in zip(sizes, shares, strict=True):
        assert abs(share - size * width / sum(sizes)) < 1


def test_rounded_columns_add_up_to_the_rounded_total() -> None:
    sizes = [round(0.494 * GIB), round(1.124 * GIB), round(0.044 * GIB), round(2.176 * GIB)]
    shown = hundredths_of_gib(sizes)
    assert round(sum(float(s) for s in shown), 2) == round(sum(sizes) / GIB, 2)


def test_the_svg_is_well_formed_and_its_rectangles_span_the_bar(prod: list[GpuBar]) -> None:
    bar = prod[0]
    root = ElementTree.fromstring(svg(bar))
    rects = root.findall(f"{SVG}rect")
    widths = [float(r.attrib["width"]) for r in rects[: len(bar.parts())]]
    assert sum(widths) == pytest.approx(float(root.attrib["width"]) - 24, abs=0.05)
    titles = " ".join(t.text or "" for t in root.iter(f"{SVG}title"))
    for process in bar.processes:
        assert f"{process.name}: weights" in titles


def test_svg_text_is_escaped() -> None:
    hostile = GpuBar("GPU <0> & 'x'", GIB, (ProcessBar('a<b>&"c"', (Segment("kv", GIB // 2),)),), 0)
    document = svg(hostile)
    root = ElementTree.fromstring(document)  # would raise on an unescaped '<' or '&'
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert any('a<b>&"c"' in (text or "") for text in texts)
    assert "<b>" not in document
