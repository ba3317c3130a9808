"""What "Model loading took" counts: PyTorch's allocator blocks, not the tensors in them.

vLLM reads the weights as `torch.cuda.max_memory_allocated()` after `empty_cache()` and a peak reset, before and
after `load_model` (`vllm 0.9.2 - 0.34.0 platforms/cuda.py::CudaPlatform.get_current_memory_usage`, called by
`utils/mem_utils.py::DeviceMemoryProfiler`). PyTorch counts every allocation at the size of the block it hands
out (`c10/cuda/CUDACachingAllocator.cpp`: `stats.allocated_bytes` grows by `block->size` in
`alloc_found_block`), and a block is not always the tensor's size:

* a request above kSmallSize (1 MiB) takes the smallest cached free block that fits (`get_free_block`), else
  a new segment (`get_allocation_size`): kLargeBuffer (20 MiB) below kMinLargeAlloc (10 MiB), else the size
  rounded up to kRoundLarge (2 MiB);
* the block is split only when more than kSmallSize would remain (`should_split`, large pool); otherwise the
  whole block goes to the tensor. A 85 MiB tensor in its own 86 MiB segment counts 86 MiB; the last tensor
  carved from a 20 MiB segment takes the segment's remainder when 1 MiB or less is left.

The model's parameters are allocated one after another while it is built and none is freed before the figure
is read, so the blocks follow from the tensors' sizes in build order. Requests of 1 MiB or less share 2 MiB
segments and are rounded to 512 bytes at most; they are left out. Temporaries freed while the model is built
(the rotary caches' float32 intermediates) leave cached blocks that later tensors may reuse; they are not
modelled (on Qwen3.6-27B-FP8 they move the figure by 1 MiB).
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Iterable

MIB = 1024 * 1024
MIN_BLOCK = 512  # kMinBlockSize: every request is rounded up to a multiple of it
SMALL_SIZE = 1 * MIB  # kSmallSize
MIN_LARGE_ALLOC = 10 * MIB  # kMinLargeAlloc
LARGE_BUFFER = 20 * MIB  # kLargeBuffer
ROUND_LARGE = 2 * MIB  # kRoundLarge


def _segment(size: int) -> int:
    if size < MIN_LARGE_ALLOC:
        return LARGE_BUFFER
    return -(-size // ROUND_LARGE) * ROUND_LARGE


def block_overhead(sizes: Iterable[int]) -> int:
    """Bytes the blocks of `sizes` (allocated in this order, none freed) hold beyond the sizes themselves.
    Sizes of 1 MiB or less are skipped (the small pool)."""
    free: list[int] = []  # the free remainders of split blocks, by size (best fit takes the smallest)
    extra = 0
    for size in sizes:
        if size <= SMALL_SIZE:
            continue
        rounded = -(-size // MIN_BLOCK) * MIN_BLOCK
        found = bisect_left(free, rounded)
        block = free.pop(found) if found < len(free) else _segment(rounded)
        remaining = block - rounded
        if remaining > SMALL_SIZE:
            insort(free, remaining)
            remaining = 0
        extra += rounded - size + remaining
    return extra
