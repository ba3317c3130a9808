"""How vLLM sizes itself at startup, release by release: its rules, its reading of a checkpoint, and the memory of
one process and of several processes on one GPU. Knows nothing of stacks, Kubernetes or AWS."""
