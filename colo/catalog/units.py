"""Binary units, as vLLM and nvidia-smi count memory."""

GIB = 1024**3
MIB = 1024**2
