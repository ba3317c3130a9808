"""Checks of the AWS side a stack depends on, made with boto3 before anything is deployed.

Every check returns a line of the report; the platform and GPU rules are the plan's own functions, so
preflight and the program cannot disagree about what is acceptable.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from colo.aws.clients import client
from colo.catalog import GpuSpec
from colo.cluster.identity import check_cluster_identity
from colo.config.cluster_target import KubeconfigCluster, cluster_target
from colo.config.schema import StackConfig
from colo.errors import ConfigError
from colo.plan.instance_check import ReportedGpus, gpu_mismatch_problems
from colo.plan.platform import platform_problems
from colo.s3_uri import parse_s3_prefix

ClientFactory = Callable[[str], Any]


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""


def _error_code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", "error"))


def check_cluster(eks: Any, config: StackConfig) -> list[Check]:
    name = config.cluster.name
    try:
        cluster = eks.describe_cluster(name=name)["cluster"]
    except ClientError as exc:
        if _error_code(exc) == "ResourceNotFoundException":
            return [
                Check(
                    "EKS cluster",
                    False,
                    f"no cluster named {name} in {eks.meta.region_name}",
                    "set colo:cluster.name to an existing cluster, or aws:region to its region",
                )
            ]
        raise
    version = str(cluster["version"])
    checks = [Check("EKS cluster", True, f"{name} exists (Kubernetes {version}, {cluster.get('status')})")]
    declared = config.cluster.kubernetes_version
    if version != declared:
        checks.append(
            Check(
                "Kubernetes version",
                False,
                f"the cluster runs {version}, the stack declares {declared}; the plan chose its pairing "
                f"and start order for {declared}",
                f'set colo:cluster.kubernetesVersion: "{version}"',
            )
        )
    actual = config.model_copy(
        update={"cluster": config.cluster.model_copy(update={"kubernetes_version": version})}
    )
    problems = [p for p in platform_problems(actual) if p.path.startswith("colo:cluster.")]
    pairing = config.cluster.gpu_pairing
    if problems:
        checks += [
            Check(f"gpuPairing {pairing} on {version}", False, p.message, f"fix {p.path}") for p in problems
        ]
    else:
        checks.append(Check(f"gpuPairing {pairing} on {version}", True, "supported by the cluster's version"))
    return checks


def check_kubernetes_context(config: StackConfig) -> list[Check]:
    """The context a stack on existing nodes deploys through reaches its API server, as the program checks
    before a preview or update; a managed stack reaches its EKS cluster by name (check_cluster)."""
    try:
        target = cluster_target(config)
        if not isinstance(target, KubeconfigCluster):
            return []
        found = check_cluster_identity(target)
    except ConfigError as error:
        return [Check("Kubernetes context", False, p.message, f"fix {p.path}") for p in error.problems]
    return [
        Check("Kubernetes context", True, f"{target.context} reaches {found.server}, the stack's API server")
    ]


def check_instance_offered(ec2: Any, config: StackConfig) -> Check:
    pool = config.node_pool
    try:
        subnets = ec2.describe_subnets(SubnetIds=list(pool.subnet_ids))["Subnets"]
    except ClientError as exc:
        if _error_code(exc) != "InvalidSubnetID.NotFound":
            raise
        return Check(
            "node subnets",
            False,
            str(exc.response["Error"].get("Message")),
            f"set colo:nodePool.subnetIds to subnets of the cluster's VPC in {ec2.meta.region_name}",
        )
    zones = {s["SubnetId"]: s["AvailabilityZone"] for s in subnets}
    offers = ec2.describe_instance_type_offerings(
        LocationType="availability-zone",
        Filters=[
            {"Name": "instance-type", "Values": [pool.instance_type]},
            {"Name": "location", "Values": sorted(set(zones.values()))},
        ],
    )["InstanceTypeOfferings"]
    offered = {o["Location"] for o in offers}
    missing = sorted(f"{subnet} ({zone})" for subnet, zone in zones.items() if zone not in offered)
    if missing:
        return Check(
            f"{pool.instance_type} in the subnets' zones",
            False,
            f"not offered for {', '.join(missing)}; offered in {', '.join(sorted(offered)) or 'none of them'}",
            "list only subnets in zones that offer it in colo:nodePool.subnetIds, or change "
            "colo:nodePool.instanceType",
        )
    return Check(
        f"{pool.instance_type} in the subnets' zones",
        True,
        f"offered in {', '.join(sorted(set(zones.values())))}",
    )


def reported_gpus(ec2: Any, instance_type: str) -> ReportedGpus:
    (info,) = ec2.describe_instance_types(InstanceTypes=[instance_type])["InstanceTypes"]
    gpus = info.get("GpuInfo", {}).get("Gpus", [])
    first = gpus[0] if gpus else None
    return ReportedGpus(
        instance_type=instance_type,
        name=first["Name"] if first else None,
        count=sum(int(g.get("Count", 0)) for g in gpus),
        memory_mib=int(first["MemoryInfo"]["SizeInMiB"]) if first else None,
    )


def check_instance_gpus(ec2: Any, config: StackConfig, gpu: GpuSpec, gpus_per_node: int) -> list[Check]:
    return check_instance_gpus_of(ec2, [config.node_pool.instance_type], gpu, gpus_per_node)


def check_instance_gpus_of(
    ec2: Any, instance_types: Sequence[str], gpu: GpuSpec, gpus_per_node: int
) -> list[Check]:
    """EC2's word on each instance type's GPUs against the GPU and count the budget used."""
    checks: list[Check] = []
    for itype in instance_types:
        reported = reported_gpus(ec2, itype)
        problems = gpu_mismatch_problems(gpu, gpus_per_node, reported)
        if problems:
            checks += [Check(f"{itype} GPUs", False, p.message, f"fix {p.path}") for p in problems]
            continue
        checks.append(
            Check(
                f"{itype} GPUs",
                True,
                f"{reported.count} x {reported.name} with {reported.memory_mib} MiB each, as the budget assumed",
            )
        )
    return checks


def s3_uris(config: StackConfig) -> list[tuple[str, str]]:
    """(config path, uri) of every s3:// profile and weightsUri."""
    found = []
    for index, pair in enumerate(config.pairs):
        for role, server in pair.servers():
            for field, value in (("profile", server.profile), ("weightsUri", server.weights_uri)):
                if value and value.startswith("s3://"):
                    found.append((f"colo:pairs[{index}].{role}.{field}", value))
    return found


def _status(exc: ClientError) -> int:
    return int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)


def _denied(exc: ClientError) -> bool:
    return _status(exc) == 403 or _error_code(exc) in ("403", "AccessDenied", "AllAccessDisabled")


def _missing(exc: ClientError) -> bool:
    return _status(exc) == 404 or _error_code(exc) in ("404", "NoSuchBucket", "NoSuchKey", "NotFound")


def check_s3_prefix(s3: Any, path: str, uri: str) -> Check:
    """Tell a missing bucket from a missing prefix, a prefix without config.json, and access denied.

    A HEAD answer has no body, so its error code is only the HTTP status: a 404 of HeadObject cannot say
    whether the bucket or the key is missing. So the bucket is asked first (HeadBucket), then the prefix is
    listed (ListObjectsV2, one key), then config.json is asked for (HeadObject) - the order of the
    permissions the weight sync needs: s3:ListBucket, then s3:GetObject."""
    where = parse_s3_prefix(uri)
    key = where.key("config.json")
    fix = f"upload the model under {where}, or correct {path}"
    try:
        s3.head_bucket(Bucket=where.bucket)
    except ClientError as exc:
        if _missing(exc):
            return Check(
                path, False, f"no bucket named {where.bucket}", f"create the bucket, or correct {path}"
            )
        if _denied(exc):
            return Check(
                path,
                False,
                f"access to bucket {where.bucket} denied (HeadBucket needs s3:ListBucket)",
                f"grant s3:ListBucket on arn:aws:s3:::{where.bucket} to the identity preflight and the sync use",
            )
        raise
    try:
        listed = s3.list_objects_v2(Bucket=where.bucket, Prefix=where.prefix, MaxKeys=1)
    except ClientError as exc:
        if _denied(exc):
            return Check(
                path,
                False,
                f"listing {where} denied (s3:ListBucket)",
                f"grant s3:ListBucket on arn:aws:s3:::{where.bucket} for the prefix {where.prefix or '/'}",
            )
        raise
    if not listed.get("KeyCount", len(listed.get("Contents", []))):
        return Check(path, False, f"{where}: no objects under that prefix in bucket {where.bucket}", fix)
    try:
        s3.head_object(Bucket=where.bucket, Key=key)
    except ClientError as exc:
        if _missing(exc):
            return Check(
                path, False, f"s3://{where.bucket}/{key}: the prefix holds objects but no config.json", fix
            )
        if _denied(exc):
            return Check(
                path,
                False,
                f"s3://{where.bucket}/{key}: reading it denied (s3:GetObject)",
                f"grant s3:GetObject on arn:aws:s3:::{where.bucket}/{where.prefix}*",
            )
        raise
    return Check(path, True, f"{where} holds config.json")


def run_checks(
    config: StackConfig,
    gpu: GpuSpec,
    gpus_per_node: int,
    *,
    region: str | None,
    clients: ClientFactory | None = None,
    more: Callable[[ClientFactory], list[Check]] | None = None,
) -> list[Check]:
    """`more`: further AWS checks, made with the same clients (e.g. colo.aws.capacity_preflight's)."""
    make = clients or (lambda service: client(service, region, config.aws_profile))
    checks = check_kubernetes_context(config)
    try:
        checks += check_cluster(make("eks"), config)
        if config.node_pool.mode == "managed":
            ec2 = make("ec2")
            checks.append(check_instance_offered(ec2, config))
            checks += check_instance_gpus(ec2, config, gpu, gpus_per_node)
        if more is not None:
            checks += more(make)
        uris = s3_uris(config)
        if uris:
            s3 = make("s3")
            checks += [check_s3_prefix(s3, path, uri) for path, uri in uris]
    except ClientError as exc:
        error = exc.response.get("Error", {})
        checks.append(
            Check("AWS", False, f"{error.get('Code')}: {error.get('Message')}", "see the AWS error")
        )
    except BotoCoreError as exc:
        checks.append(Check("AWS", False, str(exc), "check credentials and aws:region"))
    return checks
