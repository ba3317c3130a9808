"""scripts/diff-vllm-release.py: the pure parts, on small fake releases (no network, no wheel).

It collects every vLLM source colo cites, says per cited definition whether it changed between two releases
(following one that moved to another file), lists files added and deleted under the watched directories, and
diffs envs.py's variables and the config dataclasses' defaults.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from tests.paths import REPO_ROOT


def _script() -> ModuleType:
    path = REPO_ROOT / "scripts" / "diff-vllm-release.py"
    spec = importlib.util.spec_from_file_location("diff_vllm_release", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


DIFF = _script()


def _tree(root: Path, release: str, files: dict[str, str]) -> object:
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    return DIFF.Tree(release, root)


def test_citations_are_read_with_their_definitions_and_without_the_next_path() -> None:
    text = (
        "vllm 0.34.0 v1/worker/extensible_kv_cache.py::measure_kv_cache_bytes, measure_kv_cache_blocks; "
        "`vllm/v1/worker/gpu_worker.py::Worker.determine_available_memory, distributed/utils.py` and "
        "engine/arg_utils.py::EngineArgs.add_cli_args, config.py; "
        "vllm/envs.py, colo/vllm/rules.py::rules_for and bench/gpu/measure_tp_comm.py"
    )
    found = {(c.path, c.names) for c in DIFF.citations(text, "rules.yaml")}
    assert found == {
        ("v1/worker/extensible_kv_cache.py", ("measure_kv_cache_bytes", "measure_kv_cache_blocks")),
        ("v1/worker/gpu_worker.py", ("Worker.determine_available_memory",)),
        ("distributed/utils.py", ()),
        ("engine/arg_utils.py", ("EngineArgs.add_cli_args",)),
        ("config.py", ()),
        ("envs.py", ()),
    }


def test_collecting_merges_every_citing_file_and_counts_where_each_path_is_cited(tmp_path: Path) -> None:
    (tmp_path / "rules.yaml").write_text("a v1/worker/utils.py::request_memory\nb v1/worker/utils.py")
    (tmp_path / "doc.md").write_text("see vllm/v1/worker/utils.py::request_memory, bind_kv_cache")
    cited = DIFF.collect(tmp_path, ("rules.yaml", "doc.md"))
    entry = cited["v1/worker/utils.py"]
    assert entry.names == {"request_memory", "bind_kv_cache"} and entry.whole
    assert dict(entry.cited_by) == {"rules.yaml": 2, "doc.md": 1}


def test_the_repository_s_own_citations_include_the_files_the_rules_read() -> None:
    cited = DIFF.collect()
    assert "request_memory" in cited["v1/worker/utils.py"].names
    assert "Worker.determine_available_memory" in cited["v1/worker/gpu_worker.py"].names
    assert not any(path.startswith(("colo/", "bench/", "tests/")) for path in cited)


OLD_UTILS = '''
import math

def request_memory(snapshot, config):
    """Budget."""
    return math.ceil(snapshot.total * config.util)

def untouched():
    return 1

class Worker:
    def determine_available_memory(self):
        return 1
'''
NEW_UTILS = OLD_UTILS.replace(
    "return math.ceil(snapshot.total * config.util)",
    "util = config.util or 1.0\n    return math.ceil(snapshot.total * util)",
)


def test_a_cited_definition_is_diffed_and_an_untouched_one_is_said_unchanged(tmp_path: Path) -> None:
    old = _tree(tmp_path / "old", "0.1.0", {"vllm/v1/worker/utils.py": OLD_UTILS})
    new = _tree(tmp_path / "new", "0.2.0", {"vllm/v1/worker/utils.py": NEW_UTILS})
    entry = DIFF.CitedFile(names={"request_memory", "untouched", "Worker.determine_available_memory"})
    report = DIFF.compare_file(old, new, "v1/worker/utils.py", entry)
    status = {part.label: part.status for part in report.parts}
    assert status == {
        "request_memory": "CHANGED",
        "untouched": "unchanged",
        "Worker.determine_available_memory": "unchanged",
    }
    (changed,) = [part for part in report.parts if part.status == "CHANGED"]
    assert "+    util = config.util or 1.0" in changed.diff
    assert changed.diff[0] == "--- 0.1.0 request_memory"
    assert report.changed


def test_a_definition_that_moved_to_another_file_is_followed_there(tmp_path: Path) -> None:
    old = _tree(
        tmp_path / "old",
        "0.1.0",
        {"vllm/v1/core/kv_cache_utils.py": "def get_kv_cache_configs():\n    return 1\n"},
    )
    new = _tree(
        tmp_path / "new",
        "0.2.0",
        {
            "vllm/v1/core/kv_cache_utils.py": "X = 1\n",
            "vllm/v1/core/kv_cache_planning.py": "def get_kv_cache_configs():\n    return 1\n",
        },
    )
    entry = DIFF.CitedFile(names={"get_kv_cache_configs"})
    (part,) = DIFF.compare_file(old, new, "v1/core/kv_cache_utils.py", entry).parts
    assert part.status == "moved" and "0.2.0: in vllm/v1/core/kv_cache_planning.py" in part.note


def test_a_whole_file_citation_diffs_the_file_and_a_deleted_one_says_so(tmp_path: Path) -> None:
    old = _tree(
        tmp_path / "old",
        "0.1.0",
        {"vllm/envs.py": "A = 1\n", "vllm/v1/worker/gpu_model_runner.py": "x = 1\n"},
    )
    new = _tree(
        tmp_path / "new",
        "0.2.0",
        {"vllm/envs.py": "A = 2\n", "vllm/v1/worker/extensible_kv_cache.py": "y = 1\n"},
    )
    whole = DIFF.CitedFile(whole=True)
    (envs,) = DIFF.compare_file(old, new, "envs.py", whole).parts
    assert envs.status == "CHANGED" and "+A = 2" in envs.diff
    (runner,) = DIFF.compare_file(old, new, "v1/worker/gpu_model_runner.py", whole).parts
    assert runner.status == "DELETED"
    (nowhere,) = DIFF.compare_file(old, new, "config.py", whole).parts
    assert nowhere.status == "not found"
    added, deleted = DIFF.tree_changes(old, new)
    assert added == ["vllm/v1/worker/extensible_kv_cache.py"]
    assert deleted == ["vllm/v1/worker/gpu_model_runner.py"]


def test_envs_variables_and_config_defaults_are_diffed_by_name() -> None:
    old_envs = (
        'environment_variables = {\n  "VLLM_A": lambda: 1,\n  "VLLM_USE_V2_MODEL_RUNNER": lambda: 0,\n}\n'
    )
    new_envs = 'environment_variables = {\n  "VLLM_A": lambda: 2,\n  "VLLM_B": lambda: 0,\n}\n'
    added, removed, changed = DIFF.mapping_diff(DIFF.env_variables(old_envs), DIFF.env_variables(new_envs))
    assert (added, removed, changed) == (["VLLM_B"], ["VLLM_USE_V2_MODEL_RUNNER"], ["VLLM_A"])
    old_cache = "class CacheConfig:\n    DEFAULT_BLOCK_SIZE: ClassVar[int] = 16\n    gpu_memory_utilization: float = 0.92\n"
    new_cache = (
        "class CacheConfig:\n    DEFAULT_BLOCK_SIZE: ClassVar[int] = 64\n"
        "    gpu_memory_utilization: float | None = None\n    enable_extensible_kv_cache: bool = Field(default=None)\n"
    )
    before = DIFF.field_defaults(old_cache, "config/cache.py")
    after = DIFF.field_defaults(new_cache, "config/cache.py")
    added, removed, changed = DIFF.mapping_diff(before, after)
    assert added == ["config/cache.py::CacheConfig.enable_extensible_kv_cache"]
    assert changed == [
        "config/cache.py::CacheConfig.DEFAULT_BLOCK_SIZE",
        "config/cache.py::CacheConfig.gpu_memory_utilization",
    ]
    assert after["config/cache.py::CacheConfig.gpu_memory_utilization"] == "None"


def test_serve_argument_changes_name_added_removed_and_changed_options() -> None:
    old = {"prog": "vllm serve", "options": {"--a": {"dest": "a"}, "--gone": {"dest": "g"}}, "types": {}}
    new = {
        "prog": "vllm serve",
        "options": {
            "--a": {"dest": "a", "type": "_optional_type(float)"},
            "--b": {"dest": "b", "also": ["--no-b"]},
        },
        "types": {},
    }
    assert DIFF.serve_changes(old, new) == [
        "- added --b (also --no-b)",
        "- removed --gone",
        "- changed --a: type: None -> '_optional_type(float)'",
    ]
