"""A checkpoint read as vLLM reads it: config.json and its side files, quantization, safetensors bytes."""
