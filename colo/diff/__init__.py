"""`colo diff`: what a config change does to the plan and to the Kubernetes objects, as PR markdown.

plan_changes compares two plans pair by pair, objects compares rendered manifests, markdown writes the
comment. All three are pure; the CLI (colo.cli.diff_cmd) reads the two sides and runs them.
"""
