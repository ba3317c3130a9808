"""Planning a vLLM release newer than every mirrored one with the rules of a mirrored release, at the user's risk.

colo refuses a release it has not read (colo.vllm.rules.rules_for). Until it is added (docs/keeping-up.md), a
user may set `vllm.assumeRulesOf` on a server (`colo estimate --assume-rules-of`): every release-keyed table
(memory rules, argument tables, registry, quantization names, image build facts) is then read for the assumed
release, while the server runs the release it pins. The plan says so in capitals: nothing in it was read
from the pinned release's sources.
"""

from __future__ import annotations

from colo.vllm.rules import release_key, rules_for, supported_range


def assumption_refusal(version: str, assumed: str) -> str | None:
    """Why `assumed` may not stand in for `version`; None when it may. The assumed release must be one colo
    mirrors, and the pinned one newer than every mirrored release: a mirrored release has its own rules, and
    an older one is refused outright."""
    first, last = supported_range()
    try:
        rules_for(assumed)
    except ValueError:
        return (
            f"{assumed} is not a release whose memory rules colo mirrors ({first} to {last}): assume {last}"
        )
    try:
        rules_for(version)
    except ValueError:
        if release_key(version) < release_key(first):
            return f"vLLM {version} is older than every release colo mirrors: no rules are assumed for it"
        return None
    return f"colo mirrors vLLM {version} itself: drop assumeRulesOf, its own rules apply"


def assumed_rules_warning(version: str, assumed: str) -> str:
    """What the plan and the estimate say, loudly, about a server planned with another release's rules."""
    return (
        f"RULES OF ANOTHER RELEASE ASSUMED: vLLM {version} is planned with the memory rules, argument tables, "
        f"model registry and image build facts of vLLM {assumed} (assumeRulesOf), at your own risk. colo has "
        f"not read {version}'s sources: every figure of this server is {assumed}'s and may be wrong for "
        f"{version}. Check it with `colo verify` once it has started, and drop assumeRulesOf when colo "
        f"adds {version}"
    )
