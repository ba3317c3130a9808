#!/usr/bin/env bash
# Build the Kubernetes control plane that the `control_plane` tests start on loopback: kube-apiserver,
# kube-controller-manager and kube-scheduler from k8s.io/kubernetes, etcd from go.etcd.io/etcd/server/v3, and
# kwok (simulated nodes and pods), all compiled from their published Go modules. The binaries land in a cache
# directory keyed by version, which later runs (and CI, on a machine that built them once) reuse.
#
#   scripts/build-control-plane.sh                  build unless cached; print the bin directory last
#   scripts/build-control-plane.sh --print-bin-dir  print the bin directory, build nothing
#
# COLO_CONTROL_PLANE_CACHE overrides the cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/colo/control-plane).
set -euo pipefail

# The Kubernetes release colo's stacks target; its staging modules are published as v0.<minor>.<patch>.
KUBERNETES_VERSION=1.34.2
STAGING_VERSION=0.34.2
ETCD_VERSION=3.6.5
KWOK_VERSION=0.8.0
# The release whose CRDs tests/components/crd_schemas was generated from.
PROMETHEUS_OPERATOR_VERSION=0.93.0

cache_root=${COLO_CONTROL_PLANE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/colo/control-plane}
dest=$cache_root/kubernetes-v$KUBERNETES_VERSION-etcd-v$ETCD_VERSION-kwok-v$KWOK_VERSION-prometheus-operator-v$PROMETHEUS_OPERATOR_VERSION
bin_dir=$dest/bin

if [[ ${1:-} == --print-bin-dir ]]; then
	echo "$bin_dir"
	exit 0
fi
if [[ -f $dest/complete ]]; then
	echo "build-control-plane: cached in $dest" >&2
	echo "$bin_dir"
	exit 0
fi

log() { echo "build-control-plane: $*" >&2; }
command -v go >/dev/null || { log "Go is needed to build the control plane"; exit 1; }

work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
stage=$work/bin
data=$work/data
mkdir -p "$stage" "$data/crds"
export CGO_ENABLED=0 GOFLAGS=-mod=mod

# The directory of a module as the proxy serves it (downloaded into the module cache).
module_dir() {
	local dir
	dir=$(go mod download -json "$1" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
	[[ -n $dir ]] || { log "the Go module proxy served no $1"; return 1; }
	echo "$dir"
}

# The go.mod of a module as the proxy serves it.
go_mod_of() {
	local path
	path=$(go mod download -json "$1" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
	[[ -n $path ]] || { log "the Go module proxy served no $1"; return 1; }
	cat "$path"
}

# k8s.io/kubernetes and etcd's server module replace their sibling modules with relative directories that no
# module zip holds, so `go install pkg@version` refuses them. A wrapper module of our own requires the main
# module and points each relatively replaced module at its published release instead.
wrapper_module() {
	local dir=$1 name=$2 main=$3 sibling_version=$4
	mkdir -p "$dir"
	{
		printf 'module %s\n\ngo 1.24.0\n\nrequire %s\n\n' "$name" "$main"
		go_mod_of "${main/ /@}" |
			sed -n 's/^[[:space:]]*\(replace[[:space:]]\+\)\?\([^[:space:]]\+\)[[:space:]]\+=>[[:space:]]\+\.\{1,2\}\/.*/\2/p' |
			grep -v '^go.etcd.io/etcd$\|^go.etcd.io/tests/v3$' |
			while read -r module; do printf 'replace %s => %s v%s\n' "$module" "$module" "$sibling_version"; done
	} >"$dir/go.mod"
	log "$name: $(grep -c '^replace' "$dir/go.mod") replaces to v$sibling_version"
}

build_kubernetes() {
	local mod=$work/kubernetes pkg ldflags="-s -w" build_date
	wrapper_module "$mod" colo.local/kubernetesbuild "k8s.io/kubernetes v$KUBERNETES_VERSION" "$STAGING_VERSION"
	# hack/lib/version.sh in k8s.io/kubernetes stamps both packages; unstamped, servers report v0.0.0-master
	# and clients (and the API server's own compatibility version) see a release that does not exist.
	build_date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
	for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		ldflags+=" -X $pkg.gitVersion=v$KUBERNETES_VERSION -X $pkg.gitMajor=${KUBERNETES_VERSION%%.*}"
		ldflags+=" -X $pkg.gitMinor=$(cut -d. -f2 <<<"$KUBERNETES_VERSION") -X $pkg.gitTreeState=clean"
		ldflags+=" -X $pkg.buildDate=$build_date"
	done
	cd "$mod"
	go get "k8s.io/kubernetes@v$KUBERNETES_VERSION"
	go build -trimpath -ldflags "$ldflags" -o "$stage/" \
		k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
		k8s.io/kubernetes/cmd/kube-scheduler
}

build_etcd() {
	local mod=$work/etcd
	wrapper_module "$mod" colo.local/etcdbuild "go.etcd.io/etcd/server/v3 v$ETCD_VERSION" "$ETCD_VERSION"
	cd "$mod"
	go get "go.etcd.io/etcd/server/v3@v$ETCD_VERSION"
	go build -trimpath -ldflags "-s -w" -o "$stage/etcd" go.etcd.io/etcd/server/v3
}

build_kwok() {
	GOBIN=$stage go install -trimpath -ldflags "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=v$KWOK_VERSION" \
		"sigs.k8s.io/kwok/cmd/kwok@v$KWOK_VERSION"
}

# kwok's default stages (kustomize/stage in its module): nodes become Ready and keep a heartbeat; pods
# become Running and Ready, finish, and go when deleted. kwokctl hands the same set to kwok.
copy_data() {
	local kwok prometheus name
	kwok=$(module_dir "sigs.k8s.io/kwok@v$KWOK_VERSION")/kustomize/stage
	for name in node/fast/node-initialize node/heartbeat/node-heartbeat pod/fast/pod-ready pod/fast/pod-complete \
		pod/fast/pod-delete; do
		printf -- '---\n'
		cat "$kwok/$name.yaml"
	done >"$data/kwok-stages.yaml"
	prometheus=$(module_dir "github.com/prometheus-operator/prometheus-operator@v$PROMETHEUS_OPERATOR_VERSION")
	for name in podmonitors prometheusrules; do
		cp "$prometheus/example/prometheus-operator-crd/monitoring.coreos.com_$name.yaml" "$data/crds/"
	done
	chmod -R u+w "$data"
}

timed() {
	local what=$1 start=$SECONDS
	shift
	log "building $what"
	("$@")
	log "$what built in $((SECONDS - start)) s"
}

total=$SECONDS
timed "etcd v$ETCD_VERSION" build_etcd
timed "kwok v$KWOK_VERSION" build_kwok
timed "kube-apiserver, kube-controller-manager, kube-scheduler v$KUBERNETES_VERSION" build_kubernetes
timed "kwok stages and prometheus-operator v$PROMETHEUS_OPERATOR_VERSION CRDs" copy_data

# Publish whole or not at all: a half-built directory is never taken for a cached one.
mkdir -p "$cache_root"
rm -rf "$dest"
mkdir -p "$dest"
mv "$stage" "$bin_dir"
mv "$data"/* "$dest/"
printf 'kubernetes %s\netcd %s\nkwok %s\nprometheus-operator %s\n' "$KUBERNETES_VERSION" "$ETCD_VERSION" \
	"$KWOK_VERSION" "$PROMETHEUS_OPERATOR_VERSION" >"$dest/complete"
log "built in $dest in $((SECONDS - total)) s"
echo "$bin_dir"
