"""One vLLM process (one tensor-parallel rank) sized as vLLM sizes itself: weights, activations, graphs, KV pool."""
