package procs

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ModuleRoot returns the directory of the main module's go.mod.
func ModuleRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("procs: go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("procs: not inside the ticketd module; run the bench from the repository")
	}
	return filepath.Dir(mod), nil
}

// Build runs go build -o out pkg in the module at root.
func Build(ctx context.Context, root, pkg, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("procs: go build %s: %w\n%s", pkg, err, b)
	}
	return nil
}

// HasPackage reports whether dir (relative to root) holds Go files.
func HasPackage(root, dir string) bool {
	m, _ := filepath.Glob(filepath.Join(root, dir, "*.go"))
	return len(m) > 0
}
