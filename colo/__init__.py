"""colo: a large LLM and a small embedding model, both served by vLLM, on one GPU in Kubernetes."""

__all__ = ["__version__"]
__version__ = "0.1.0"
