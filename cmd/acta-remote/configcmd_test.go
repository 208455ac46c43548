package main

import (
	"bytes"
	"errors"
	"os/exec"
	"testing"

	"github.com/acta-remote/acta-remote/config"
)

// `config default` prints the embedded default byte for byte, `config
// check` accepts it and names every mistake of a bad file with exit 1.
func TestConfigCommand(t *testing.T) {
	bin := buildBinary(t)
	out, _ := runTool(t, bin, "config", "default")
	if out != string(config.DefaultYAML) {
		t.Fatalf("config default printed %d bytes, not the %d of default.yaml", len(out), len(config.DefaultYAML))
	}
	if out, _ := runTool(t, bin, "config", "check", "../../config/testdata/good_otlp.yaml"); out != "../../config/testdata/good_otlp.yaml: valid\n" {
		t.Errorf("check of a good file printed %q", out)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "config", "check", "../../config/testdata/bad_otlp_all.yaml")
	cmd.Stderr = &stderr
	var ee *exec.ExitError
	if err := cmd.Run(); !errors.As(err, &ee) || ee.ExitCode() != exitError {
		t.Fatalf("check of a bad file: %v, want exit %d", err, exitError)
	}
	if n := bytes.Count(stderr.Bytes(), []byte("config: otlp.")); n != 8 {
		t.Errorf("check named %d mistakes, want 8:\n%s", n, stderr.String())
	}
}
