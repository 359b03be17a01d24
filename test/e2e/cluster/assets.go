package cluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// wrappedBinaries are started by envtest and must die with the test
// process: envtest starts them in their own process group without a
// parent-death signal, so a test killed by a signal or by a `go test
// -timeout` panic would leave them running.
var wrappedBinaries = []string{"etcd", "kube-apiserver"}

// privateAssets creates dir with one wrapper script per control-plane binary
// of assetsDir that execs the real binary under `setpriv --pdeathsig KILL`
// (the death signal survives exec), plus a kubectl symlink.
func privateAssets(assetsDir, dir string) error {
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		return errors.New("cluster: setpriv (util-linux) not found; it makes the control plane die with the test process")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	for _, name := range wrappedBinaries {
		real := filepath.Join(assetsDir, name)
		if _, err := os.Stat(real); err != nil {
			return fmt.Errorf("cluster: %s missing from KUBEBUILDER_ASSETS %s (run hack/envtest-binaries.sh): %w", name, assetsDir, err)
		}
		script := fmt.Sprintf("#!/bin/sh\nexec %s --pdeathsig KILL %s \"$@\"\n", shellQuote(setpriv), shellQuote(real))
		if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
			return fmt.Errorf("cluster: write wrapper for %s: %w", name, err)
		}
	}
	kubectl := filepath.Join(assetsDir, "kubectl")
	if _, err := os.Stat(kubectl); err != nil {
		return fmt.Errorf("cluster: kubectl missing from %s: %w", assetsDir, err)
	}
	if err := os.Symlink(kubectl, filepath.Join(dir, "kubectl")); err != nil {
		return fmt.Errorf("cluster: link kubectl: %w", err)
	}
	return nil
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
