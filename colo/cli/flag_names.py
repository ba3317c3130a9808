"""Stack keys as `colo estimate`'s flags: the memory model words its fixes with the stack's keys (`maxModelLen at
most 40960`), and `colo estimate` shows them as the flags the user typed (`--max-model-len at most 40960`).

The mapping is defined once, from EstimateArguments (whose field names are the flags' names, and whose stack
keys are the same names in camelCase), plus the keys whose stack spelling differs from the flag's.
"""

from __future__ import annotations

import re
from functools import cache

from pydantic.alias_generators import to_camel

from colo.config.estimate import EstimateArguments

# Stack keys whose spelling is not the flag's name in camelCase.
SPELLED_OTHERWISE = {
    "vllm.version": "--vllm-version",
    "gpuMemoryMiB": "--gpu-memory-mib",
    "nodePool.gpu": "--gpu",
    "nodePool.gpuMemoryMiB": "--gpu-memory-mib",
    "speculative.method": "--speculative-method",
    "speculative.numSpeculativeTokens": "--num-speculative-tokens",
}


def flag(field: str) -> str:
    """An EstimateArguments field as its flag: max_model_len -> --max-model-len."""
    return "--" + field.replace("_", "-")


@cache
def stack_key_flags() -> dict[str, str]:
    """Every stack key `colo estimate` has a flag for, camelCase (and dotted) key -> flag."""
    named = {to_camel(field): flag(field) for field in EstimateArguments.model_fields if "_" in field}
    return {**named, **SPELLED_OTHERWISE}


@cache
def _key_pattern() -> re.Pattern[str]:
    keys = sorted(stack_key_flags(), key=len, reverse=True)  # the longest first: allowLongMaxModelLen
    alternatives = "|".join(re.escape(key) for key in keys)
    # a whole key, not part of a longer word or path; a boolean's ": true" is the flag itself
    return re.compile(rf"(?<![\w.:-])({alternatives})(?::\s*true)?(?![\w])")


def as_flags(text: str) -> str:
    """`text` with every stack key it names replaced by the flag that sets it."""
    return _key_pattern().sub(lambda match: stack_key_flags()[match.group(1)], text)
