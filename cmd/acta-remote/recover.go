package main

import (
	"fmt"
	"os"

	"github.com/acta-remote/acta-remote/acta"
)

func init() {
	register("recover", "show an Acta file's recovery plan; --repair cuts an incomplete final frame", runRecover)
}

func runRecover(args []string) int {
	fa, err := parseFileArgs(args, []string{"repair"}, nil)
	if err != nil {
		fmt.Fprintf(os.Stderr, "acta-remote recover: %v\nusage: acta-remote recover FILE [--repair]\n", err)
		return exitError
	}
	p, err := acta.InspectRecovery(fa.file)
	if err != nil {
		return fileExit("recover", err)
	}
	fmt.Printf("file:             %s\nsize:             %d bytes\n", fa.file, p.Size)
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
	if !fa.bools["repair"] {
		fmt.Printf("action:           run with --repair to truncate to %d\n", p.LastGoodOffset)
		return exitOK
	}
	sum, err := acta.RepairIncompleteTail(fa.file)
	if err != nil {
		return fileExit("recover", err)
	}
	fmt.Printf("repaired:         removed %d bytes; file is %d bytes with %d blocks\n", sum.BytesRemoved, sum.NewSize, sum.Blocks)
	return exitOK
}
