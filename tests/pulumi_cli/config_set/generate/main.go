// Command generate writes stack files exactly as `pulumi config set` writes them, by running the Pulumi
// SDK code the CLI itself runs for that command (pkg/cmd/pulumi/config/config.go, configSetCmd.Run):
// load the stack file (workspace.LoadProjectStack), type the value (config.NewTypedValue, or
// config.NewSecureValue for --secret), set it (config.Map.Set, --path aware) and save the file
// (ProjectStack.Save, which edits the YAML in place and keeps its comments). Secrets use the passphrase
// secrets provider, as a file backend (`pulumi login --local`) does by default.
//
// Usage, from this directory: go run . ../../../.. ..   (the repository root, then where the files go)
package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/common/diag"
	"github.com/pulumi/pulumi/sdk/v3/go/common/diag/colors"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/config"
	"github.com/pulumi/pulumi/sdk/v3/go/common/workspace"
)

// The passphrase the secrets are encrypted with; colo never decrypts them (the engine does).
const passphrase = "colo-test-passphrase"

// set is one `pulumi config set [--path] [--secret] <key> <value>`.
type set struct {
	key, value   string
	path, secret bool
}

// fixture is a stack file: a copy of `base` (a repository path; empty: a new stack, as `pulumi stack
// init` leaves it) after `sets`, applied one command at a time.
type fixture struct {
	name string
	base string
	sets []set
}

var fixtures = []fixture{
	{"local.max-model-len", "stacks/Pulumi.local.yaml", []set{
		{key: "pairs[0].llm.maxModelLen", value: "16384", path: true},
	}},
	{"local.spare-gpus", "stacks/Pulumi.local.yaml", []set{
		{key: "nodePool.spareGpus", value: "1", path: true},
	}},
	{"local.hf-token", "stacks/Pulumi.local.yaml", []set{
		{key: "hfToken", value: "hf_0123456789abcdefghijklmnopqrstuv", secret: true},
	}},
	{"local.cpu-true", "stacks/Pulumi.local.yaml", []set{
		{key: "pairs[0].llm.cpu", value: "true", path: true},
	}},
	{"cli-only", "", []set{
		{key: "cluster.kubernetesVersion", value: "1.34", path: true},
		{key: "cluster.gpuPairing", value: "time-slice", path: true},
		{key: "cluster.nativeSidecars", value: "true", path: true},
		{key: "cluster.kubeconfigContext", value: "kind-colo", path: true},
		{key: "cluster.apiServer", value: "https://127.0.0.1:6443", path: true},
		{key: "nodePool.mode", value: "existing", path: true},
		{key: `nodePool.nodeSelector["nvidia.com/gpu.present"]`, value: "true", path: true},
		{key: `nodePool.nodeSelector["colo.dev/pool"]`, value: "7", path: true},
		{key: "nodePool.spareGpus", value: "1", path: true},
		{key: "storage.storageClass", value: "standard", path: true},
		{key: "storage.size", value: "100Gi", path: true},
		{key: "storage.readThroughputMiBps", value: "312.5", path: true},
		{key: "budget.safetyMarginMiB", value: "768", path: true},
		{key: "budget.embeddingConcurrency", value: "1.5", path: true},
		{key: "pairs[0].name", value: "chat", path: true},
		{key: "pairs[0].llm.model", value: "Qwen/Qwen3-8B-FP8", path: true},
		{key: "pairs[0].llm.maxModelLen", value: "16384", path: true},
		{key: "pairs[0].llm.enforceEager", value: "false", path: true},
		{key: "pairs[0].llm.cpu", value: "4", path: true},
		{key: "pairs[0].llm.memory", value: "24Gi", path: true},
		{key: "pairs[0].llm.extraArgs[0]", value: "--max-log-len", path: true},
		{key: "pairs[0].llm.extraArgs[1]", value: "100", path: true},
		{key: "pairs[0].llm.vllm.version", value: "0.19.1", path: true},
		{key: "pairs[0].embedding.model", value: "Qwen/Qwen3-Embedding-0.6B", path: true},
		{key: "pairs[0].embedding.vllm.version", value: "0.19.1", path: true},
		{key: "hfToken", value: "hf_0123456789abcdefghijklmnopqrstuv", secret: true},
	}},
}

func main() {
	if len(os.Args) != 3 {
		fail(fmt.Errorf("usage: go run . <repository root> <output directory>"))
	}
	root, out := os.Args[1], os.Args[2]
	project, err := workspace.LoadProject(filepath.Join(root, "Pulumi.yaml"))
	fail(err)
	sink := diag.DefaultSink(os.Stderr, os.Stderr, diag.FormatOptions{Color: colors.Never})
	for _, f := range fixtures {
		path := filepath.Join(out, f.name+".yaml")
		if f.base == "" {
			stackInit(path)
		} else {
			base, err := os.ReadFile(filepath.Join(root, f.base))
			fail(err)
			fail(os.WriteFile(filepath.Join(out, baseName(f.base)), base, 0o644))
			fail(os.WriteFile(path, base, 0o644))
		}
		for _, s := range f.sets {
			configSet(sink, project, path, s)
		}
	}
}

// baseName is the fixture name of a copied base stack file: stacks/Pulumi.local.yaml -> local.yaml.
func baseName(path string) string {
	return strings.TrimPrefix(filepath.Base(path), "Pulumi.")
}

// stackInit writes what `pulumi stack init` leaves for a passphrase-encrypted stack: its salt only.
func stackInit(path string) {
	ps := &workspace.ProjectStack{Config: config.Map{}, EncryptionSalt: newSalt()}
	fail(ps.Save(path))
}

// configSet is configSetCmd.Run for a file-backed stack, without the prompts.
func configSet(sink diag.Sink, project *workspace.Project, path string, s set) {
	ps, err := workspace.LoadProjectStack(sink, project, path)
	fail(err)
	key, err := parseConfigKey(string(project.Name), s.key, s.path)
	fail(err)
	var v config.Value
	if s.secret {
		if ps.EncryptionSalt == "" {
			ps.EncryptionSalt = newSalt() // the passphrase provider stores a salt on first use
		}
		enc, err := crypter(ps.EncryptionSalt).EncryptValue(context.Background(), s.value)
		fail(err)
		v = config.NewSecureValue(enc)
	} else {
		v = config.NewTypedValue(s.value, config.TypeUnknown)
	}
	fail(ps.Config.Set(key, v, s.path))
	fail(ps.Save(path))
}

// parseConfigKey is pkg/cmd/pulumi/config/io.go parseConfigKey: a path's first segment carries the
// namespace, and a key without one belongs to the project.
func parseConfigKey(project, key string, path bool) (config.Key, error) {
	if path {
		if i := strings.IndexAny(key, "[."); i > 0 {
			top, err := parseConfigKey(project, key[:i], false)
			if err != nil {
				return config.Key{}, err
			}
			return config.MustMakeKey(top.Namespace(), top.Name()+key[i:]), nil
		}
	}
	if !strings.Contains(key, ":") {
		return config.ParseKey(project + ":" + key)
	}
	return config.ParseKey(key)
}

// newSalt is the passphrase provider's state for a new stack (pkg/secrets/passphrase/manager.go).
func newSalt() string {
	salt := make([]byte, 8)
	_, err := rand.Read(salt)
	fail(err)
	msg, err := config.NewSymmetricCrypterFromPassphrase(passphrase, salt).EncryptValue(context.Background(), "pulumi")
	fail(err)
	return fmt.Sprintf("v1:%s:%s", base64.StdEncoding.EncodeToString(salt), msg)
}

func crypter(state string) config.Crypter {
	parts := strings.SplitN(state, ":", 3)
	salt, err := base64.StdEncoding.DecodeString(parts[1])
	fail(err)
	return config.NewSymmetricCrypterFromPassphrase(passphrase, salt)
}

func fail(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
