# The weight-sync image: `python -m colo.aws.weight_sync s3://bucket/prefix/ /models/<pair>/<role>`.
# It carries colo's code and boto3 only: the sync command imports nothing else of colo, so neither the
# Pulumi SDKs nor pydantic are installed. Build and push it, then set storage.syncImage to the pinned
# tag (docs/kubernetes.md).
FROM python:3.11.13-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /src
COPY pyproject.toml ./
COPY colo ./colo
# boto3 is the one dependency the sync needs, pinned to a release the tests run against; --no-deps then
# leaves out the rest of pyproject's (Pulumi, pydantic, PyYAML).
RUN pip install "boto3==1.44.8" && pip install --no-deps . && rm -rf /src

# The UID the pods run every container as (colo.components.pod_security.RUN_AS); no shell, no home.
RUN groupadd --gid 10001 colo && useradd --uid 10001 --gid 10001 --no-create-home --shell /usr/sbin/nologin colo
USER 10001:10001
WORKDIR /

ENTRYPOINT ["python", "-m", "colo.aws.weight_sync"]
