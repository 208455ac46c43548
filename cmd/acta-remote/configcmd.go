package main

import (
	"fmt"
	"os"

	"github.com/acta-remote/acta-remote/config"
)

func init() {
	register("config", "print the embedded default config (config default) or check a config file (config check FILE)", runConfig)
}

// runConfig: `config default` writes default.yaml (every key, commented) to
// stdout, the file to start an /etc config from; `config check FILE` loads
// FILE as serve would and reports every mistake, exit 1 if any.
func runConfig(args []string) int {
	switch {
	case len(args) == 1 && args[0] == "default":
		os.Stdout.Write(config.DefaultYAML)
		return exitOK
	case len(args) == 2 && args[0] == "check":
		if _, err := config.Load(args[1]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return exitError
		}
		fmt.Printf("%s: valid\n", args[1])
		return exitOK
	}
	fmt.Fprintln(os.Stderr, "usage: acta-remote config default | acta-remote config check FILE")
	return exitError
}
