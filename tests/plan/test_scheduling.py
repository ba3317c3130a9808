"""Where GPU pods run and which device plugin colo installs: decided in the plan, read by components."""

from __future__ import annotations

from colo.cli.common import load_config
from colo.plan.scheduling import DevicePluginPlan
from colo.plan.stack import make_plan
from colo.stackfiles import load_stack

TAINT = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def test_managed_pools_select_colo_labels_and_the_plugin_also_the_gpu_label() -> None:
    plan = make_plan(load_config(load_stack("prod")))
    assert plan.node_selector == {"colo.dev/gpu-pool": "colo-prod"}
    assert plan.tolerations == (TAINT,)
    assert plan.device_plugin == DevicePluginPlan(
        namespace="colo-nvidia-device-plugin",
        node_selector={"colo.dev/gpu-pool": "colo-prod", "nvidia.com/gpu.present": "true"},
        time_slices=None,
    )


def test_existing_nodes_are_selected_by_the_user_labels_and_time_sliced_per_largest_pair() -> None:
    plan = make_plan(load_config(load_stack("local")))
    assert plan.node_selector == {"colo.dev/gpu-pool": "colo"}
    assert plan.device_plugin is not None
    assert plan.device_plugin.node_selector == plan.node_selector
    assert plan.device_plugin.time_slices == 2


def test_dra_and_node_images_with_their_own_plugin_get_none_from_colo() -> None:
    assert make_plan(load_config(load_stack("dev"))).device_plugin is None
    config = load_config(load_stack("local"))
    cluster = config.cluster.model_copy(update={"node_image": "gpu-operator-cdi"})
    assert make_plan(config.model_copy(update={"cluster": cluster})).device_plugin is None
