#!/usr/bin/env bash
# Build the real Pulumi engine that the `engine` tests drive: the `pulumi` CLI and the Kubernetes provider
# (`pulumi-resource-kubernetes`), compiled from their published Go modules, since Pulumi's own download
# servers may be out of reach. Nothing downloaded is kept in the repository: the binaries land in a cache
# directory keyed by version, which later runs (and CI, on a machine that built them once) reuse.
#
#   scripts/build-pulumi-engine.sh                  build unless cached; print the bin directory last
#   scripts/build-pulumi-engine.sh --print-bin-dir  print the bin directory, build nothing
#
# COLO_PULUMI_ENGINE_CACHE overrides the cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/colo/pulumi-engine).
#
# Not built: pulumi-language-python. It is a module of its own with no release tags, and the Go module proxy
# serves no pseudo-version of it, so colo runs under this engine as an Automation API inline program
# (colo/inline_engine.py), which needs no language host. Nor the AWS provider: its module replaces its
# upstream with a patched git submodule and generates its schema with tfgen, which no published module holds.
set -euo pipefail

PULUMI_VERSION=3.274.1
# The provider module has no provider/v4 tags; this pseudo-version is the commit of tag v4.25.0 (f47bc2d6f199).
K8S_VERSION=4.25.0
K8S_PROVIDER_MODULE_VERSION=v4.0.0-20260115033456-f47bc2d6f199
K8S_MODULE=github.com/pulumi/pulumi-kubernetes

cache_root=${COLO_PULUMI_ENGINE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/colo/pulumi-engine}
dest=$cache_root/pulumi-v$PULUMI_VERSION-kubernetes-v$K8S_VERSION
bin_dir=$dest/bin

if [[ ${1:-} == --print-bin-dir ]]; then
	echo "$bin_dir"
	exit 0
fi
if [[ -f $dest/complete ]]; then
	echo "build-pulumi-engine: cached in $dest" >&2
	echo "$bin_dir"
	exit 0
fi

log() { echo "build-pulumi-engine: $*" >&2; }
command -v go >/dev/null || { log "Go is needed to build the engine"; exit 1; }

work=$(mktemp -d)
# Module directories are read-only in the module cache, and so are their copies.
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
stage=$work/bin
mkdir -p "$stage"
export CGO_ENABLED=0 GOFLAGS=-mod=mod

# The CLI's module replaces sdk/v3 with a sibling directory and pins a clipboard fork, so `go install
# pkg@version` refuses it; a small module of our own requires both at the same version and repeats the
# fork's replace.
build_cli() {
	local mod=$work/cli
	mkdir -p "$mod"
	cat >"$mod/go.mod" <<GOMOD
module colo.local/pulumibuild

go 1.25

require (
	github.com/pulumi/pulumi/pkg/v3 v$PULUMI_VERSION
	github.com/pulumi/pulumi/sdk/v3 v$PULUMI_VERSION
)

replace github.com/atotto/clipboard => github.com/tgummerer/clipboard v0.0.0-20241001131231-d02d263e614e
GOMOD
	cd "$mod"
	go get -tool "github.com/pulumi/pulumi/pkg/v3/cmd/pulumi@v$PULUMI_VERSION"
	go build -trimpath \
		-ldflags "-s -w -X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=v$PULUMI_VERSION" \
		-o "$stage/pulumi" github.com/pulumi/pulumi/pkg/v3/cmd/pulumi
}

# The provider's main package embeds a schema that its own `go generate` writes from the committed
# schema.json, so the build runs in a writable copy of the module. The module also replaces its SDK with a
# sibling directory the module zip lacks; the SDK published for the same release stands in.
build_kubernetes() {
	local src=$work/kubernetes dir
	dir=$(go mod download -json "$K8S_MODULE/provider/v4@$K8S_PROVIDER_MODULE_VERSION" |
		sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
	[[ -n $dir ]] || { log "the Go module proxy served no $K8S_MODULE/provider/v4@$K8S_PROVIDER_MODULE_VERSION"; return 1; }
	cp -r "$dir" "$src"
	chmod -R u+w "$src"
	cd "$src"
	go mod edit -dropreplace="$K8S_MODULE/sdk/v4" -require="$K8S_MODULE/sdk/v4@v$K8S_VERSION"
	(cd cmd/pulumi-resource-kubernetes && VERSION=$K8S_VERSION go generate .)
	go build -trimpath -ldflags "-s -w -X $K8S_MODULE/provider/v4/pkg/version.Version=$K8S_VERSION" \
		-o "$stage/pulumi-resource-kubernetes" ./cmd/pulumi-resource-kubernetes
}

timed() {
	local what=$1 start=$SECONDS
	shift
	log "building $what"
	("$@")
	log "$what built in $((SECONDS - start)) s"
}

timed "pulumi v$PULUMI_VERSION" build_cli
timed "pulumi-resource-kubernetes v$K8S_VERSION" build_kubernetes

# Publish whole or not at all: a half-built directory is never taken for a cached one.
mkdir -p "$cache_root"
rm -rf "$dest"
mkdir -p "$dest"
mv "$stage" "$bin_dir"
printf 'pulumi %s\npulumi-resource-kubernetes %s\n' "$PULUMI_VERSION" "$K8S_VERSION" >"$dest/complete"
log "built in $dest"
echo "$bin_dir"
