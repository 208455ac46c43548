package main

import (
	"fmt"
	"os"

	"github.com/acta-remote/acta-remote/acta"
)

func init() {
	register("validate", "check an Acta file (--level structural|full)", runValidate)
}

func runValidate(args []string) int {
	fa, err := parseFileArgs(args, nil, []string{"level"})
	if err != nil {
		fmt.Fprintf(os.Stderr, "acta-remote validate: %v\nusage: acta-remote validate FILE [--level structural|full]\n", err)
		return exitError
	}
	level := acta.ValidateFull
	switch fa.vals["level"] {
	case "", "full":
	case "structural":
		level = acta.ValidateStructural
	default:
		fmt.Fprintf(os.Stderr, "acta-remote validate: --level %q: want structural or full\n", fa.vals["level"])
		return exitError
	}
	if err := acta.Validate(fa.file, level); err != nil {
		return fileExit("validate", err)
	}
	name := "full"
	if level == acta.ValidateStructural {
		name = "structural"
	}
	fmt.Printf("%s: valid (%s)\n", fa.file, name)
	return exitOK
}
