"""Parse and validate the stack config; the rest of colo only ever sees a StackConfig."""

from colo.config.load import CONFIG_KEYS, assemble_stack_config, parse_stack_config
from colo.config.schema import Pair, ServerSpec, StackConfig

__all__ = ["CONFIG_KEYS", "Pair", "ServerSpec", "StackConfig", "assemble_stack_config", "parse_stack_config"]
