"""GPU capacity that Karpenter launches: the NodePool (and, for self-managed Karpenter, the EC2NodeClass) a stack's
plan needs, for nodePool.mode karpenter and auto (EKS Auto Mode). Pure: the objects' bodies as plain data.

Everything is derived from the plan: the GPU (catalog) and how many a node carries, the instance types of colo's
catalog that carry them and fit the pods placed on a node, the GPUs and nodes the plan needs (spare GPUs
included), the disk for the images and weights, the labels and taint the pairs select and tolerate. The
disruption settings keep Karpenter from moving a pair that loads or serves (docs/capacity.md says why each).
colo.components.karpenter only wraps the bodies in Kubernetes objects.

Read from aws/karpenter-provider-aws v1.14.1 (commit bde00654cd316fddb3dccfba3f5ac07039865429) and the
sigs.k8s.io/karpenter it pins (6e7eab7a0f48): the CRDs pkg/apis/crds/karpenter.sh_nodepools.yaml and
karpenter.k8s.aws_ec2nodeclasses.yaml, website/content/en/preview/concepts/{disruption,nodepools,nodeclasses}.md.
EKS Auto Mode: the Amazon EKS User Guide (awsdocs/amazon-eks-user-guide latest/ug/automode/*.adoc).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from colo.catalog import GpuSpec, InstanceType, instance_type, instance_type_names
from colo.catalog.ec2_gpus import ec2_gpu_name, gpu_name_label
from colo.config.schema import KARPENTER_MODES, Cluster, Karpenter, NodePool, StackConfig
from colo.errors import Problem
from colo.plan.node_disk import MIN_VOLUME_GIB, disk_need_gib
from colo.plan.pair import PairPlan
from colo.plan.resources import node_fit_problems
from colo.plan.scheduling import GPU_TAINT_KEY, node_labels

CapacityMode = Literal["karpenter", "auto"]


class Planned(Protocol):
    """What the capacity is derived from: colo.plan.stack.Plan (which imports this module to check it)."""

    @property
    def config(self) -> StackConfig: ...
    @property
    def gpu(self) -> GpuSpec: ...
    @property
    def gpus_per_node(self) -> int: ...
    @property
    def node_count(self) -> int: ...
    @property
    def pairs(self) -> Sequence[PairPlan]: ...
    @property
    def feasible(self) -> bool: ...


# The Karpenter release colo's objects are written for and checked against (its CRDs are vendored under
# tests/components/crd_schemas/karpenter).
KARPENTER_VERSION = "1.14.1"
KARPENTER_SOURCE = (
    "aws/karpenter-provider-aws v1.14.1 (commit bde00654cd316fddb3dccfba3f5ac07039865429; sigs.k8s.io/karpenter "
    "v1.14.1-0.20260819221709-6e7eab7a0f48)"
)
NODE_POOL_API = "karpenter.sh/v1"
EC2_NODE_CLASS_API = "karpenter.k8s.aws/v1"
AUTO_NODE_CLASS_GROUP = "eks.amazonaws.com"

# The pod annotation that keeps Karpenter (and Auto Mode) from choosing to move a pod: consolidation and drift
# pass over its node; expiration, interruption and repair still drain it (disruption.md, "Pod-Level Controls").
DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
# How long a node with no pair on it stays before consolidation removes it: a pair restarting on its node (a
# rollout, a crash) finds it still there, with the image pulled. AWS's own GPU NodePool uses 1h "to reduce node
# churn" (Amazon EKS User Guide, "Deploy an accelerated workload", automode/auto-accelerated.adoc).
CONSOLIDATE_AFTER = "1h"
# EKS Auto Mode replaces every node within 21 days ("EKS Auto Mode enforces a 21-day maximum node lifetime",
# automode/automode.adoc): colo asks for the longest life it allows. Self-managed Karpenter's default is 720h.
AUTO_MODE_EXPIRE_AFTER = "504h"
# How long an expired Auto Mode node keeps a pair before Karpenter deletes it: a day for the operator to roll the
# pair at a time they choose (the built-in Auto Mode pools and AWS's GPU example use 24h).
AUTO_MODE_TERMINATION_GRACE = "24h"
# The EC2NodeClass `role` Karpenter's getting-started CloudFormation creates: KarpenterNodeRole-${ClusterName}
# (website/content/en/preview/getting-started/getting-started-with-karpenter/cloudformation.yaml).
DEFAULT_NODE_ROLE = "KarpenterNodeRole-{cluster}"
# The tag Karpenter's getting-started guide puts on the cluster's subnets and node security group.
DISCOVERY_TAG = "karpenter.sh/discovery"
# Bottlerocket's OS volume as Karpenter defaults it (nodeclasses.md, "spec.blockDeviceMappings": /dev/xvda 4Gi);
# a blockDeviceMappings list replaces the defaults, so colo states it beside the data volume it sizes.
BOTTLEROCKET_OS_GIB = 4
# The AMI alias family per node image: Karpenter picks the NVIDIA variant of either for GPU instance types
# (pkg/providers/amifamily/al2023.go and bottlerocket.go, DescribeImageQuery).
AMI_FAMILIES = {"al2023-nvidia": "al2023", "bottlerocket-nvidia": "bottlerocket"}
# The volume that holds images and pod storage: AL2023's root volume, Bottlerocket's data volume
# (amifamily EphemeralBlockDevice); Karpenter reads the node's ephemeral-storage from it.
IMAGE_VOLUMES = {"al2023-nvidia": "/dev/xvda", "bottlerocket-nvidia": "/dev/xvdb"}
ALIAS_MAX_CHARS = 30  # EC2NodeClass amiSelectorTerms[].alias maxLength
IAM_ROLE_MAX_CHARS = 64
# The ephemeral storage of Auto Mode's built-in `default` NodeClass (automode/create-node-class.adoc: size 80Gi).
AUTO_MODE_DEFAULT_NODE_CLASS = "default"
AUTO_MODE_DEFAULT_STORAGE_GIB = 80
# The accelerated instance families EKS Auto Mode launches (automode/automode-learn-instances.adoc at
# awsdocs/amazon-eks-user-guide 06faff1411463d22284cc02e7602daf4c19f9204, "EKS Auto Mode supported instance
# reference").
AUTO_MODE_GPU_FAMILIES = frozenset(
    {"p6-b200", "p6-b300", "p5", "p5e", "p5en", "p4d", "p4de", "p3dn", "g7e", "g6", "gr6", "g6e", "g5g", "g5"}
    | {"g4dn", "g4ad"}
)
# The DRA driver is part of Auto Mode nodes from Kubernetes 1.36 (Amazon EKS User Guide, "Manage hardware devices
# on Amazon EKS" and "Use the NVIDIA DRA driver or device plugin on Amazon EKS").
AUTO_MODE_DRA_MIN_MINOR = 36

LABEL_DOMAINS: dict[CapacityMode, str] = {"karpenter": "karpenter.k8s.aws", "auto": "eks.amazonaws.com"}


@dataclass(frozen=True)
class Requirement:
    key: str
    values: tuple[str, ...]

    def body(self) -> dict[str, Any]:
        return {"key": self.key, "operator": "In", "values": list(self.values)}


@dataclass(frozen=True)
class Ec2NodeClassSpec:
    """The EC2NodeClass of self-managed Karpenter: how an instance boots and what it is allowed."""

    name: str
    role: str
    ami_alias: str
    subnet_ids: tuple[str, ...]  # empty: the subnets tagged karpenter.sh/discovery: <cluster>
    security_group_ids: tuple[str, ...]  # empty: likewise
    discovery_value: str
    image_device: str
    volume_gib: int
    bottlerocket: bool

    def _selector(self, ids: Sequence[str]) -> list[dict[str, Any]]:
        if ids:
            return [{"id": value} for value in ids]
        return [{"tags": {DISCOVERY_TAG: self.discovery_value}}]

    def _volumes(self) -> list[dict[str, Any]]:
        def ebs(device: str, gib: int) -> dict[str, Any]:
            return {
                "deviceName": device,
                "ebs": {
                    "volumeSize": f"{gib}Gi",
                    "volumeType": "gp3",
                    "encrypted": True,
                    "deleteOnTermination": True,
                },
            }

        os_volume = [ebs("/dev/xvda", BOTTLEROCKET_OS_GIB)] if self.bottlerocket else []
        return [*os_volume, ebs(self.image_device, self.volume_gib)]

    def body(self) -> dict[str, Any]:
        return {
            "role": self.role,
            "amiSelectorTerms": [{"alias": self.ami_alias}],
            "subnetSelectorTerms": self._selector(self.subnet_ids),
            "securityGroupSelectorTerms": self._selector(self.security_group_ids),
            "blockDeviceMappings": self._volumes(),
            # Pods cannot reach the instance metadata service (one hop: the node itself), so no pod borrows the
            # node role; Karpenter's default too, stated so that a changed default changes nothing here.
            "metadataOptions": {
                "httpEndpoint": "enabled",
                "httpProtocolIPv6": "disabled",
                "httpPutResponseHopLimit": 1,
                "httpTokens": "required",
            },
        }


@dataclass(frozen=True)
class CapacitySpec:
    """What nodePool.mode karpenter or auto launches: one NodePool, and for karpenter its EC2NodeClass."""

    mode: CapacityMode
    name: str  # of the NodePool (and the EC2NodeClass): cluster-scoped, so the stack's namespace names it
    gpu: GpuSpec
    gpus_per_node: int
    instance_types: tuple[str, ...]  # the candidates, smallest first
    max_nodes: int
    max_gpus: int
    labels: dict[str, str]
    disk_gib: int  # what the plan needs on a node's image volume
    node_class: Ec2NodeClassSpec | None  # None: Auto Mode's NodeClass `auto_node_class`
    auto_node_class: str | None
    requirements: tuple[Requirement, ...]

    @property
    def node_class_ref(self) -> dict[str, str]:
        if self.node_class is not None:
            return {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": self.node_class.name}
        return {"group": AUTO_NODE_CLASS_GROUP, "kind": "NodeClass", "name": str(self.auto_node_class)}

    def _disruption(self) -> dict[str, Any]:
        # Only a node with no pair on it is ever consolidated, one node at a time. Auto Mode's expiry needs a
        # terminationGracePeriod, which would let drift (a weekly AMI) evict pairs too: drift is closed there.
        budgets: list[dict[str, Any]] = [{"nodes": "1"}]
        if self.mode == "auto":
            budgets.insert(0, {"nodes": "0", "reasons": ["Drifted"]})
        return {"consolidationPolicy": "WhenEmpty", "consolidateAfter": CONSOLIDATE_AFTER, "budgets": budgets}

    def node_pool_body(self) -> dict[str, Any]:
        """spec of the karpenter.sh/v1 NodePool."""
        template: dict[str, Any] = {
            "nodeClassRef": self.node_class_ref,
            "requirements": [requirement.body() for requirement in self.requirements],
            "taints": [{"key": GPU_TAINT_KEY, "value": "true", "effect": "NoSchedule"}],
            # Karpenter's expiry is forceful: it drains a pair regardless of do-not-disrupt.
            "expireAfter": AUTO_MODE_EXPIRE_AFTER if self.mode == "auto" else "Never",
        }
        if self.mode == "auto":
            template["terminationGracePeriod"] = AUTO_MODE_TERMINATION_GRACE
        return {
            "template": {"metadata": {"labels": dict(self.labels)}, "spec": template},
            # Karpenter launches a node only while the NodePool's nodes stay within these; an instance type is
            # skipped when its whole capacity would pass them (scheduler.go, filterByRemainingResources), so the
            # GPUs are whole nodes' worth.
            "limits": {"nvidia.com/gpu": str(self.max_gpus), "nodes": str(self.max_nodes)},
            "disruption": self._disruption(),
        }

    def ec2_node_class_body(self) -> dict[str, Any] | None:
        """spec of the karpenter.k8s.aws/v1 EC2NodeClass; None in Auto Mode."""
        return self.node_class.body() if self.node_class is not None else None


def capacity_mode(config: StackConfig) -> CapacityMode | None:
    mode = config.node_pool.mode
    if mode == "karpenter" or mode == "auto":
        return mode
    return None


def settings(config: StackConfig) -> Karpenter:
    return _settings(config.node_pool)


def _settings(pool: NodePool) -> Karpenter:
    return pool.karpenter or Karpenter()


def node_pool_name(config: StackConfig) -> str:
    """NodePools and EC2NodeClasses belong to the cluster; the stack's namespace keeps two stacks' apart."""
    return f"{config.cluster.namespace}-gpu"


def node_role(config: StackConfig) -> str:
    return _node_role(config.cluster, config.node_pool)


def _node_role(cluster: Cluster, pool: NodePool) -> str:
    return _settings(pool).node_role or DEFAULT_NODE_ROLE.format(cluster=cluster.name)


def _family(name: str) -> str:
    return name.split(".", 1)[0]


def _pods_by_node(pairs: Sequence[PairPlan]) -> list[list[tuple[str, Sequence[tuple[str, str, str]]]]]:
    nodes: dict[int, list[tuple[str, Sequence[tuple[str, str, str]]]]] = {}
    for pair in pairs:
        requests = [(s.role.value, s.cpu, s.memory) for s in pair.servers]
        nodes.setdefault(pair.placement.node, []).append((f"colo:pairs[{pair.name}]", requests))
    return list(nodes.values())


def _fits(instance: InstanceType, pairs: Sequence[PairPlan]) -> bool:
    return not any(node_fit_problems(instance, pods) for pods in _pods_by_node(pairs))


def instance_type_candidates(
    config: StackConfig, gpu: GpuSpec, gpus_per_node: int, pairs: Sequence[PairPlan]
) -> tuple[str, ...]:
    """The instance types Karpenter may launch: the one the stack names, else every catalog type with the plan's
    GPU and GPUs per node; of those, the ones whose CPU and memory hold the pods the plan puts on a node (and, in
    Auto Mode, of a family it launches). Smallest first."""
    pool = config.node_pool
    if "instance_type" in pool.model_fields_set:
        names = [pool.instance_type]
    else:
        names = [
            name
            for name in instance_type_names()
            if (known := instance_type(name)) is not None
            and known.gpu == gpu.name
            and known.gpus == gpus_per_node
        ]
    found = [known for name in names if (known := instance_type(name)) is not None and _fits(known, pairs)]
    if pool.mode == "auto":
        found = [known for known in found if _family(known.name) in AUTO_MODE_GPU_FAMILIES]
    return tuple(known.name for known in sorted(found, key=lambda it: (it.vcpus, it.memory_mib, it.name)))


def _requirements(
    mode: CapacityMode, gpu: GpuSpec, gpus_per_node: int, instance_types: Sequence[str]
) -> tuple[Requirement, ...]:
    """The instance types, and the GPU labels Karpenter gives them: a catalog that named a type wrongly launches
    nothing rather than the wrong GPU. On demand only: a reclaimed spot instance drains its pair at two minutes'
    notice."""
    domain = LABEL_DOMAINS[mode]
    ec2_name = ec2_gpu_name(gpu.name)
    found = [
        Requirement("node.kubernetes.io/instance-type", tuple(instance_types)),
        Requirement("karpenter.sh/capacity-type", ("on-demand",)),
    ]
    if ec2_name is not None:
        found.append(Requirement(f"{domain}/instance-gpu-name", (gpu_name_label(ec2_name),)))
    found.append(Requirement(f"{domain}/instance-gpu-count", (str(gpus_per_node),)))
    if gpu.ec2_memory_mib is not None:
        found.append(Requirement(f"{domain}/instance-gpu-memory", (str(gpu.ec2_memory_mib),)))
    return tuple(found)


def _pairing_problems(cluster: Cluster, mode: CapacityMode) -> list[Problem]:
    """GPU pairing methods each mode cannot run, with the reason (docs/capacity.md, "Pairing")."""
    path = "colo:cluster.gpuPairing"
    method = cluster.gpu_pairing
    if mode == "karpenter" and method == "time-slice":
        return [
            Problem(
                path,
                "time-slice pods request nvidia.com/gpu.shared, which only colo's device plugin advertises once "
                "a node runs; Karpenter launches a node only for resources an instance type offers "
                "(sigs.k8s.io/karpenter pkg/utils/resources Fits), so these pods would stay Pending. Use "
                "uuid-handoff (al2023-nvidia) with mode karpenter, or time-slice with mode managed",
            )
        ]
    if mode == "karpenter" and method == "dra":
        return [
            Problem(
                path,
                f"Karpenter {KARPENTER_VERSION} skips pods with ResourceClaims while --ignore-dra-requests is on, "
                "its default (pkg/operator/options/options.go); AWS documents DRA with Karpenter from 1.15 behind "
                "feature gates. Use uuid-handoff (al2023-nvidia) with mode karpenter, or dra with mode managed",
            )
        ]
    if mode == "auto" and method == "uuid-handoff":
        return [
            Problem(
                path,
                "EKS Auto Mode runs its own Bottlerocket-based image and NVIDIA device plugin, whose runtime "
                "settings colo can neither set nor read; Bottlerocket ignores NVIDIA_VISIBLE_DEVICES in "
                "unprivileged containers by default, so the LLM would start without a GPU. Use gpuPairing: dra "
                f"(Kubernetes >= 1.{AUTO_MODE_DRA_MIN_MINOR}), or mode karpenter",
            )
        ]
    if mode == "auto" and method == "time-slice":
        return [
            Problem(
                path,
                "EKS Auto Mode runs its own NVIDIA device plugin (not visible as a DaemonSet) with no "
                "time-slicing setting, so nvidia.com/gpu.shared is never advertised. Use gpuPairing: dra "
                f"(Kubernetes >= 1.{AUTO_MODE_DRA_MIN_MINOR}), or mode managed",
            )
        ]
    if mode == "auto" and method == "dra" and cluster.minor < AUTO_MODE_DRA_MIN_MINOR:
        return [
            Problem(
                "colo:cluster.kubernetesVersion",
                f"EKS Auto Mode includes NVIDIA's DRA driver from Kubernetes 1.{AUTO_MODE_DRA_MIN_MINOR}; the "
                f"cluster is {cluster.kubernetes_version}. Upgrade it, or use mode karpenter or managed",
            )
        ]
    return []


def _node_class_problems(cluster: Cluster, pool: NodePool, mode: CapacityMode) -> list[Problem]:
    problems: list[Problem] = []
    if mode == "karpenter":
        if cluster.node_image not in AMI_FAMILIES:
            problems.append(
                Problem(
                    "colo:cluster.nodeImage",
                    f"Karpenter launches the EKS AMIs by alias, {' or '.join(AMI_FAMILIES)} here; {cluster.node_image}"
                    " nodes are built elsewhere: set nodePool.mode: existing and nodePool.nodeSelector",
                )
            )
        else:
            alias = f"{AMI_FAMILIES[cluster.node_image]}@{_settings(pool).ami_version}"
            if len(alias) > ALIAS_MAX_CHARS:
                problems.append(
                    Problem(
                        "colo:nodePool.karpenter.amiVersion",
                        f"the AMI alias {alias} is longer than the {ALIAS_MAX_CHARS} characters Karpenter accepts",
                    )
                )
        role = _node_role(cluster, pool)
        if len(role) > IAM_ROLE_MAX_CHARS:
            problems.append(
                Problem(
                    "colo:nodePool.karpenter.nodeRole",
                    f"the default role name {role} is longer than IAM's {IAM_ROLE_MAX_CHARS} characters; name "
                    "the nodes' role",
                )
            )
    if mode == "auto" and pool.subnet_ids:
        problems.append(
            Problem(
                "colo:nodePool.subnetIds",
                "in EKS Auto Mode the NodeClass chooses the subnets (spec.subnetSelectorTerms); remove subnetIds, "
                "or set them in the NodeClass named by karpenter.nodeClass",
            )
        )
    return problems


def _ec2_problems(
    config: StackConfig, gpu: GpuSpec, gpus_per_node: int, candidates: Sequence[str]
) -> list[Problem]:
    pool = config.node_pool
    if ec2_gpu_name(gpu.name) is None:
        return [
            Problem(
                "colo:nodePool.gpu",
                f"Karpenter chooses instance types by the GPU EC2 reports, and colo knows no EC2 instance type "
                f"carrying {gpu.name}; name a GPU of colo's instance types (colo/catalog/instance_types.yaml)",
            )
        ]
    if candidates:
        return []
    where = " that EKS Auto Mode launches" if pool.mode == "auto" else ""
    if "instance_type" in pool.model_fields_set:
        return [
            Problem(
                "colo:nodePool.instanceType",
                f"{pool.instance_type} cannot hold the pods the plan puts on a node{where}; remove instanceType "
                "so that Karpenter may choose among the sizes that can, or name a larger one",
            )
        ]
    return [
        Problem(
            "colo:nodePool.gpusPerNode",
            f"no instance type in colo's catalog{where} has {gpus_per_node} {gpu.name} GPU"
            f"{'s' if gpus_per_node != 1 else ''} and room for the pods the plan puts on a node; change "
            "gpusPerNode (or instanceType, which sets it)",
        )
    ]


def _disk_problems(config: StackConfig, mode: CapacityMode, pairs: Sequence[PairPlan]) -> list[Problem]:
    """Auto Mode's built-in NodeClass has a fixed disk: the plan's images and weights must fit on it."""
    if mode != "auto" or settings(config).node_class != AUTO_MODE_DEFAULT_NODE_CLASS:
        return []
    need = config.node_pool.root_volume_gib or disk_need_gib(pairs)
    if need <= AUTO_MODE_DEFAULT_STORAGE_GIB:
        return []
    return [
        Problem(
            "colo:nodePool.karpenter.nodeClass",
            f"EKS Auto Mode's built-in NodeClass gives a node {AUTO_MODE_DEFAULT_STORAGE_GIB} GiB of ephemeral "
            f"storage, and the pairs on a node need {need} GiB for their images and weights; declare a NodeClass "
            f"with ephemeralStorage.size: {need}Gi and name it here (colo preflight checks its size)",
        )
    ]


def mode_problems(cluster: Cluster, pool: NodePool) -> list[Problem]:
    """What the stack's cluster and pool settings alone rule out for mode karpenter or auto (no plan needed, so
    `colo pack` can check a mode before its search)."""
    mode = pool.mode
    if mode != "karpenter" and mode != "auto":
        return []
    return [*_pairing_problems(cluster, mode), *_node_class_problems(cluster, pool, mode)]


def capacity_problems(
    config: StackConfig, gpu: GpuSpec, gpus_per_node: int, pairs: Sequence[PairPlan]
) -> list[Problem]:
    """Why the stack's Karpenter or Auto Mode capacity cannot run its pairs; empty for the other modes."""
    mode = capacity_mode(config)
    if mode is None:
        return []
    candidates = instance_type_candidates(config, gpu, gpus_per_node, pairs)
    return [
        *mode_problems(config.cluster, config.node_pool),
        *_ec2_problems(config, gpu, gpus_per_node, candidates),
        *_disk_problems(config, mode, pairs),
    ]


def capacity_spec(plan: Planned) -> CapacitySpec | None:
    """What the plan's Karpenter or Auto Mode capacity declares; None for modes managed and existing. The plan
    must be feasible (its problems include capacity_problems)."""
    config = plan.config
    mode = capacity_mode(config)
    if mode is None:
        return None
    pool = config.node_pool
    candidates = instance_type_candidates(config, plan.gpu, plan.gpus_per_node, plan.pairs)
    max_nodes = max(plan.node_count, pool.max_nodes or plan.node_count)
    disk = pool.root_volume_gib or disk_need_gib(plan.pairs)
    node_class = None
    if mode == "karpenter":
        image = config.cluster.node_image
        node_class = Ec2NodeClassSpec(
            name=node_pool_name(config),
            role=node_role(config),
            ami_alias=f"{AMI_FAMILIES[image]}@{settings(config).ami_version}",
            subnet_ids=tuple(pool.subnet_ids),
            security_group_ids=tuple(settings(config).security_group_ids),
            discovery_value=config.cluster.name,
            image_device=IMAGE_VOLUMES[image],
            volume_gib=pool.root_volume_gib or max(MIN_VOLUME_GIB, disk),
            bottlerocket=image == "bottlerocket-nvidia",
        )
    return CapacitySpec(
        mode=mode,
        name=node_pool_name(config),
        gpu=plan.gpu,
        gpus_per_node=plan.gpus_per_node,
        instance_types=candidates,
        max_nodes=max_nodes,
        max_gpus=max_nodes * plan.gpus_per_node,
        labels=node_labels(config),
        disk_gib=disk,
        node_class=node_class,
        auto_node_class=settings(config).node_class if mode == "auto" else None,
        requirements=_requirements(mode, plan.gpu, plan.gpus_per_node, candidates),
    )


def pod_annotations(config: StackConfig) -> dict[str, str]:
    """What a pair's pod carries for the capacity it runs on: with Karpenter or Auto Mode, do-not-disrupt.

    Always, not only while it starts: a pair is one replica on one GPU, so any move is an outage as long as its
    cold start, and Karpenter's voluntary reasons (a cheaper node, a newer AMI) are never worth that. The operator
    moves a pair by rolling it; the annotation also outlives a NodePool edit that loosens its policy."""
    return {DO_NOT_DISRUPT: "true"} if config.node_pool.mode in KARPENTER_MODES else {}


def capacity_view(plan: Planned) -> dict[str, Any] | None:
    """What `colo plan` shows of the capacity Karpenter or Auto Mode launches; None for the other modes."""
    if not plan.feasible:
        return None
    spec = capacity_spec(plan)
    if spec is None:
        return None
    node_class = spec.node_class
    return {
        "mode": spec.mode,
        "karpenter": KARPENTER_VERSION,
        "node_pool": spec.name,
        "node_class": spec.node_class_ref,
        "instance_types": list(spec.instance_types),
        "gpu": spec.gpu.name,
        "gpus_per_node": spec.gpus_per_node,
        "max_nodes": spec.max_nodes,
        "max_gpus": spec.max_gpus,
        "disk_gib": node_class.volume_gib if node_class is not None else spec.disk_gib,
        "ami_alias": node_class.ami_alias if node_class is not None else None,
        "node_role": node_class.role if node_class is not None else None,
    }
