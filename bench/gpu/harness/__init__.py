"""Start colo's planned vLLM servers on a GPU machine and record what they did (standard library only).

These modules run on the GPU machine under its own Python (3.12 there), beside vLLM installed from a carried
wheel set, so they import nothing outside the standard library except `tokenizers` where the machine has it.
"""
