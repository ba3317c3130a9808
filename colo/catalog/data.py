"""The YAML files colo ships (catalogs, vLLM's release rules and registries), parsed with libyaml.

PyYAML's pure-Python loader spends seconds on the few thousand lines colo reads at every start (the
architecture registry, the rules, the argument tables); libyaml's, where PyYAML was built with it (every
wheel on PyPI is), does the same in a fraction of that, with the same safe schema. These files are
colo's own and trusted; a user's stack file goes through colo.config.yaml_safety instead.
"""

from __future__ import annotations

from typing import Any

import yaml

_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def parse_yaml(text: str) -> Any:
    return yaml.load(text, Loader=_LOADER)  # a safe loader: plain data only
