#!/usr/bin/env bash
# Build Pulumi YAML's language host (`pulumi-language-yaml`), which the `yaml` tests use to run a Pulumi program
# written in another language than Python against colo's component provider (pulumi-resource-colo). Built from
# its published Go module (the module proxy serves its tags, unlike the other language hosts') into a cache
# directory keyed by version; the CLI and Kubernetes provider come from scripts/build-pulumi-engine.sh.
#
#   scripts/build-pulumi-yaml.sh                  build unless cached; print the bin directory last
#   scripts/build-pulumi-yaml.sh --print-bin-dir  print the bin directory, build nothing
#
# COLO_PULUMI_ENGINE_CACHE overrides the cache root, as for the engine.
set -euo pipefail

YAML_VERSION=1.25.0
MODULE=github.com/pulumi/pulumi-yaml

cache_root=${COLO_PULUMI_ENGINE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/colo/pulumi-engine}
dest=$cache_root/pulumi-yaml-v$YAML_VERSION
bin_dir=$dest/bin

if [[ ${1:-} == --print-bin-dir ]]; then
	echo "$bin_dir"
	exit 0
fi
if [[ -f $dest/complete ]]; then
	echo "build-pulumi-yaml: cached in $dest" >&2
	echo "$bin_dir"
	exit 0
fi
command -v go >/dev/null || { echo "build-pulumi-yaml: Go is needed to build it" >&2; exit 1; }

work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
start=$SECONDS
echo "build-pulumi-yaml: building pulumi-language-yaml v$YAML_VERSION" >&2
(cd "$work" && CGO_ENABLED=0 GOFLAGS=-mod=mod GOBIN="$work/bin" go install -trimpath -ldflags "-s -w" \
	"$MODULE/cmd/pulumi-language-yaml@v$YAML_VERSION")
echo "build-pulumi-yaml: built in $((SECONDS - start)) s" >&2

# Publish whole or not at all: a half-built directory is never taken for a cached one.
mkdir -p "$cache_root"
rm -rf "$dest"
mkdir -p "$dest"
mv "$work/bin" "$bin_dir"
printf 'pulumi-language-yaml %s\n' "$YAML_VERSION" >"$dest/complete"
echo "$bin_dir"
