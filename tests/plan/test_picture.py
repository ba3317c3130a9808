"""The picture of a GPU's budget: its parts add up to the GPU, every part is named, it fits the width given,
falls back to ASCII, and its SVG is well-formed with every text escaped."""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree

import pytest
from hypothesis import given
from hypothesis import strategies as st

from colo.cli.common import load_config
from colo.plan.budget_bars import gpu_bar, gpu_bars, process_parts, svg_files
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
from tests.vllm.helpers import sized

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


def test_what_a_process_holds_after_startup_is_the_budgets_own_figure_not_a_remainder() -> None:
    """Each named part is read from the budget, so the last one is what it holds beyond them once serving
    (warm-up leftovers, communication buffers outside vLLM's budget), never a correction of the others."""
    for stack in list_stacks():
        for pair in make_plan(load_config(load_stack(stack))).pairs:
            for server in pair.servers:
                budget = server.memory_plan.budget
                parts = process_parts(budget)
                assert parts["other"] == budget.post_profile_bytes + budget.communication.unbudgeted
                assert min(parts.values()) >= 0, server.name


def test_a_pool_sized_after_warm_up_is_drawn_with_that_sizings_own_figures() -> None:
    """0.34's footprint is context + non_kv + committed pages + transient + after startup: the KV part is
    the pages as the driver maps them (a hybrid model's segments round up to granules, beyond blocks x
    bytes per block), the activation part the transient kept free plus what stays allocated."""
    budget = sized("Qwen/Qwen3.5-27B", "H100-SXM", "0.34.0", max_model_len=32768)
    measured = budget.measured
    assert measured is not None
    parts = process_parts(budget)
    assert sum(parts.values()) == budget.footprint_bytes
    assert parts["kv"] == measured.physical_bytes > budget.kv_bytes
    non_kv = parts["weights"] + parts["non_torch"] + parts["graphs"]
    assert parts["activation"] == measured.non_kv_bytes - non_kv + measured.transient_bytes
    assert parts["other"] == budget.post_profile_bytes + budget.communication.unbudgeted
    assert min(parts.values()) >= 0


def test_a_tensor_parallel_pair_is_drawn_on_every_gpu_of_its_group_with_what_the_plan_put_there() -> None:
    plan = make_plan(load_config(load_stack("tp")))
    (pair,) = plan.pairs
    group = pair.group
    assert group is not None
    bars = gpu_bars(pair)
    assert len(bars) == group.tensor_parallel_size
    for k, (bar, gpu_plan) in enumerate(zip(bars, group.gpus, strict=True)):
        assert bar.used_bytes == gpu_plan.used_bytes
        assert bar.processes[-1].name == f"{pair.llm.name} rank {k}"
        assert f"GPU {pair.placement.gpu + k} of node" in bar.title
    companions = [process.name for bar in bars for process in bar.processes[:-1]]
    assert sorted(companions) == sorted(server.name for server in pair.servers[:-1])
    assert sorted(svg_files(plan, "")) == [f"gpu-{k}.svg" for k in range(group.tensor_parallel_size)]


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
