"""After deploy: what vLLM reported at startup, held against the plan (`colo verify`)."""
