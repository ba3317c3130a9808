"""The stack's plan, pure: placement, pairing, probes and the specs the components declare; every memory figure
comes from colo.vllm."""
