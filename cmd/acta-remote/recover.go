package main

import (
	"fmt"
	"os"

	"github.com/acta-remote/acta-remote/acta"
)

func init() {
	register("recover", "show an Acta file's recovery plan; --repair cuts an incomplete final frame; --salvage recovers the blocks after damage (a FILE or a --data-dir)", runRecover)
}

const recoverUsage = `usage: acta-remote recover FILE [--repair]
       acta-remote recover --salvage FILE [--out FILE] [--schema-from FILE] [--json]
       acta-remote recover --salvage --data-dir DIR [--schema-from FILE] [--json]`

func runRecover(args []string) int {
	fa, err := parseArgs(args, []string{"repair", "salvage", "json"}, []string{"out", "schema-from", "data-dir"})
	if err == nil {
		err = checkRecoverArgs(fa)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "acta-remote recover: %v\n%s\n", err, recoverUsage)
		return exitError
	}
	switch {
	case fa.bools["salvage"] && fa.vals["data-dir"] != "":
		return salvageDataDir(fa.vals["data-dir"], fa.vals["schema-from"], fa.bools["json"])
	case fa.bools["salvage"]:
		return salvageFile(fa.file, fa.vals["out"], fa.vals["schema-from"], fa.bools["json"])
	}
	return recoverPlan(fa.file, fa.bools["repair"])
}

// checkRecoverArgs refuses flag combinations that mean nothing, rather than
// ignore a flag.
func checkRecoverArgs(fa fileArgs) error {
	_, dir := fa.vals["data-dir"]
	salvage := fa.bools["salvage"]
	switch {
	case fa.bools["repair"] && salvage:
		return fmt.Errorf("--repair and --salvage exclude each other")
	case !salvage && (dir || fa.bools["json"] || fa.vals["out"] != "" || fa.vals["schema-from"] != ""):
		return fmt.Errorf("--data-dir, --out, --schema-from and --json go with --salvage")
	case dir && fa.vals["data-dir"] == "":
		return fmt.Errorf("--data-dir needs a directory")
	case dir && fa.file != "":
		return fmt.Errorf("give a FILE or --data-dir, not both")
	case dir && fa.vals["out"] != "":
		return fmt.Errorf("--out is for one FILE; --data-dir salvages in place")
	case !dir && fa.file == "":
		return fmt.Errorf("missing FILE")
	}
	return nil
}

// recoverPlan prints the recovery plan of path (§13.2) and, with repair,
// cuts an incomplete final frame.
func recoverPlan(path string, repair bool) int {
	p, err := acta.InspectRecovery(path)
	if err != nil {
		code := fileExit("recover", err)
		if code == exitCorrupt {
			fmt.Fprintf(os.Stderr, "acta-remote recover: to keep the blocks after the damage: acta-remote recover --salvage %s\n", path)
		}
		return code
	}
	fmt.Printf("file:             %s\nsize:             %d bytes\n", path, p.Size)
	switch {
	case p.SchemaIncomplete:
		fmt.Printf("state:            the file ends inside its prologue or schema frame; nothing to keep, not repairable\n")
		return exitCorrupt
	case !p.IncompleteTail:
		fmt.Printf("state:            complete (%d blocks); nothing to repair\n", p.Blocks)
		return exitOK
	}
	declared := "unknown (prefix incomplete)"
	if p.TailDeclared > 0 {
		declared = fmt.Sprintf("%d bytes", p.TailDeclared)
	}
	fmt.Printf("state:            incomplete final frame (sequence %d)\nlast good offset: %d\ncomplete blocks:  %d\ntail:             %d bytes on disk, declared %s\n",
		p.NextSeq, p.LastGoodOffset, p.Blocks, p.TailBytes, declared)
	if !repair {
		fmt.Printf("action:           run with --repair to truncate to %d\n", p.LastGoodOffset)
		return exitOK
	}
	sum, err := acta.RepairIncompleteTail(path)
	if err != nil {
		return fileExit("recover", err)
	}
	fmt.Printf("repaired:         removed %d bytes; file is %d bytes with %d blocks\n", sum.BytesRemoved, sum.NewSize, sum.Blocks)
	return exitOK
}
