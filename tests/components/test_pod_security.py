"""One source of pod security: servers and the device plugin drop the same privileges; only the plugin is root."""

from __future__ import annotations

from collections.abc import Callable

from colo.components.pod_security import RUN_AS, SECCOMP_PROFILE
from colo.mock_run import ProgramRun

DAEMON_SET = "kubernetes:apps/v1:DaemonSet"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"


def test_device_plugin_drops_what_the_servers_drop_and_differs_only_in_running_as_root(
    checked_in_run: Callable[[str, bool], ProgramRun],
) -> None:
    run = checked_in_run("local", False)
    (plugin,) = run.mocks.of_type(DAEMON_SET)
    plugin_pod = plugin.inputs["spec"]["template"]["spec"]
    server_pod = run.mocks.of_type(DEPLOYMENT)[0].inputs["spec"]["template"]["spec"]
    server_context = server_pod["containers"][0]["securityContext"]
    plugin_context = plugin_pod["containers"][0]["securityContext"]
    assert server_context == {**plugin_context, "runAsNonRoot": True}
    assert plugin_context["seccompProfile"] == {"type": SECCOMP_PROFILE}
    assert plugin_pod["securityContext"] == {"seccompProfile": {"type": SECCOMP_PROFILE}}
    assert server_pod["securityContext"]["runAsUser"] == server_pod["securityContext"]["fsGroup"] == RUN_AS
