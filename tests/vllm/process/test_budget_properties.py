"""Invariants of the budget engine, over many models, GPUs, releases and limits."""

from __future__ import annotations

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from colo.catalog import gpu_names
from colo.catalog.models import catalog_ids
from colo.vllm.checkpoint.quant_methods import QuantizationRefused
from colo.vllm.colocate import ServerRequest, plan_gpu
from colo.vllm.process.budget import size_process
from colo.vllm.rules import releases
from tests.vllm.helpers import process

VERSIONS = sorted({r.first for r in releases()} | {r.last for r in releases()})
DECODERS = [m for m in catalog_ids() if m != "BAAI/bge-m3"]

models = st.sampled_from(DECODERS)
versions = st.sampled_from(VERSIONS)
gpus = st.sampled_from(gpu_names())
lengths = st.sampled_from([2048, 4096, 8192, 16384, 32768])


@settings(max_examples=60, deadline=None)
@given(
    model=models,
    version=versions,
    gpu_name=gpus,
    length=lengths,
    low=st.floats(0.3, 0.9),
    step=st.floats(0.001, 0.09),
)
def test_more_utilization_never_gives_less_kv_cache(
    model: str, version: str, gpu_name: str, length: int, low: float, step: float
) -> None:
    try:
        small = size_process(
            process(model, gpu_name, version, max_model_len=length, gpu_memory_utilization=low)
        )
    except QuantizationRefused:  # vLLM refuses the checkpoint's method on this GPU: nothing to size
        assume(False)
    large = size_process(
        process(model, gpu_name, version, max_model_len=length, gpu_memory_utilization=low + step)
    )
    assert large.kv_bytes >= small.kv_bytes
    if small.capacity and large.capacity:
        assert large.capacity.num_blocks >= small.capacity.num_blocks
        assert large.capacity.max_concurrency >= small.capacity.max_concurrency


@settings(max_examples=60, deadline=None)
@given(model=models, version=versions, length=lengths, seqs=st.sampled_from([16, 64, 256]))
def test_a_longer_context_never_raises_concurrency(model: str, version: str, length: int, seqs: int) -> None:
    short = size_process(process(model, "H200", version, max_model_len=length, max_num_seqs=seqs))
    long = size_process(process(model, "H200", version, max_model_len=length * 2, max_num_seqs=seqs))
    assert short.capacity is not None and long.capacity is not None
    assert long.capacity.max_concurrency <= short.capacity.max_concurrency


@settings(max_examples=40, deadline=None)
@given(model=models, version=versions, length=lengths)
def test_eager_mode_never_holds_more_memory_than_captured_graphs(
    model: str, version: str, length: int
) -> None:
    graphs = size_process(process(model, "H200", version, max_model_len=length, gpu_memory_utilization=0.8))
    eager = size_process(
        process(model, "H200", version, max_model_len=length, gpu_memory_utilization=0.8, enforce_eager=True)
    )
    # a model whose weights overrun the request has no pool to compare (0.34+ starts it anyway, over its request)
    assume(graphs.kv_bytes > 0)
    assert eager.kv_bytes >= graphs.kv_bytes
    if graphs.measured is None:
        assert eager.footprint_bytes <= graphs.footprint_bytes
    else:  # sized after warm-up (0.34+): either way the process fills its request, never more
        ceiling = graphs.context_bytes + graphs.requested_bytes + graphs.post_profile_bytes
        assert max(eager.footprint_bytes, graphs.footprint_bytes) <= ceiling


@settings(max_examples=60, deadline=None)
@given(
    llm=models,
    embedder=st.sampled_from(["Qwen/Qwen3-Embedding-0.6B", "BAAI/bge-m3"]),
    version=versions,
    gpu_name=gpus,
    length=lengths,
    margin=st.sampled_from([0, 256, 512, 1024]),
)
def test_a_plan_that_passes_never_exceeds_the_gpu(
    llm: str, embedder: str, version: str, gpu_name: str, length: int, margin: int
) -> None:
    requests = [
        ServerRequest(
            "embedding",
            "colo:pairs[0].embedding",
            process(embedder, gpu_name, version, max_model_len=2048, max_num_seqs=32, pooling=True),
            "auto",
            2.0,
        ),
        ServerRequest(
            "llm", "colo:pairs[0].llm", process(llm, gpu_name, version, max_model_len=length), "auto", 1.0
        ),
    ]
    try:
        plan = plan_gpu(requests[0].spec.gpu, requests, margin)
    except QuantizationRefused:  # the plan refuses such a GPU before sizing (plan/pair.py::refusal_problems)
        assume(False)
    assume(plan.feasible)  # too big a model for the GPU is refused elsewhere; here: what passes is safe
    assert plan.used_bytes <= plan.gpu.cuda_total_bytes - plan.safety_margin_bytes
    assert all(s.budget.startup.ok for s in plan.servers)
    for server in plan.servers:
        assert server.budget.capacity is None or server.budget.capacity.max_concurrency >= 1.0
