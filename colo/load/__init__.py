"""`colo load`: a bounded load on a deployed pair, the LLM alone and beside its busy companions, measured in place.

Each phase is bounded in requests and seconds, the whole probe by a deadline; every connection it opens is
closed when it ends. colo.load.requests speaks to vLLM's OpenAI-compatible API over any connected socket;
colo.load.phases runs the phases; colo.load.portforward reaches a pod through the Kubernetes API's port-forward.
"""
