package main

import (
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/acta-remote/acta-remote/acta"
)

func init() {
	register("inspect", "print an Acta file's prologue, schema, blocks and tail state", runInspect)
}

// fileExit prints err for command name and maps it to the file commands'
// exit codes. Every refusal caused by the file's content is 2 or 3: corrupt
// bytes 2; another format version, a feature this build does not decode
// (the reference calls both unsupported) or a size beyond the reader's
// limits 3. Only usage and I/O errors are 1.
func fileExit(name string, err error) int {
	switch {
	case errors.Is(err, acta.ErrUnsupportedVersion):
		fmt.Fprintf(os.Stderr, "acta-remote %s: unsupported version: %v\n", name, err)
		return exitUnsupported
	case errors.Is(err, acta.ErrCorrupt):
		fmt.Fprintf(os.Stderr, "acta-remote %s: corrupt file: %v\n", name, err)
		return exitCorrupt
	case errors.Is(err, acta.ErrUnsupported):
		fmt.Fprintf(os.Stderr, "acta-remote %s: unsupported: %v\n", name, err)
		return exitUnsupported
	case errors.Is(err, acta.ErrLimit):
		fmt.Fprintf(os.Stderr, "acta-remote %s: beyond the reader's limits: %v\n", name, err)
		return exitUnsupported
	}
	fmt.Fprintf(os.Stderr, "acta-remote %s: %v\n", name, err)
	return exitError
}

// fileArgs is a small parser for "FILE [flags]" in any order: the flag
// package stops at the first positional argument.
type fileArgs struct {
	file  string
	bools map[string]bool
	vals  map[string]string
}

func parseFileArgs(args []string, boolFlags, valFlags []string) (fileArgs, error) {
	fa, err := parseArgs(args, boolFlags, valFlags)
	if err == nil && fa.file == "" {
		err = errors.New("missing FILE")
	}
	return fa, err
}

// parseArgs is parseFileArgs where FILE may be absent.
func parseArgs(args []string, boolFlags, valFlags []string) (fileArgs, error) {
	fa := fileArgs{bools: map[string]bool{}, vals: map[string]string{}}
	isIn := func(s string, l []string) bool {
		for _, x := range l {
			if x == s {
				return true
			}
		}
		return false
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") || a == "-" {
			if fa.file != "" {
				return fa, fmt.Errorf("unexpected argument %q", a)
			}
			fa.file = a
			continue
		}
		name := strings.TrimLeft(a, "-")
		val, hasVal := "", false
		if k := strings.IndexByte(name, '='); k >= 0 {
			name, val, hasVal = name[:k], name[k+1:], true
		}
		switch {
		case isIn(name, boolFlags):
			fa.bools[name] = true
		case isIn(name, valFlags):
			if !hasVal {
				if i+1 >= len(args) {
					return fa, fmt.Errorf("flag -%s needs a value", name)
				}
				i++
				val = args[i]
			}
			fa.vals[name] = val
		default:
			return fa, fmt.Errorf("unknown flag %q", a)
		}
	}
	return fa, nil
}

func runInspect(args []string) int {
	fa, err := parseFileArgs(args, nil, nil)
	if err != nil {
		fmt.Fprintf(os.Stderr, "acta-remote inspect: %v\nusage: acta-remote inspect FILE\n", err)
		return exitError
	}
	r, err := acta.Open(fa.file)
	if err != nil {
		return fileExit("inspect", err)
	}
	defer r.Close()
	s := r.Schema()
	fi, _ := os.Stat(fa.file)
	rows := 0
	for _, b := range r.Blocks() {
		rows += b.Rows
	}
	id := r.FileID()
	features := "none"
	if r.RowIDs() {
		features = "row_ids"
	}
	primary := "none"
	if pi := s.PrimaryIndex(); pi >= 0 {
		primary = fmt.Sprintf("%s (column %d)", s.Columns[pi].Name, s.Primary)
	}
	tail := "complete"
	if r.IncompleteTail() {
		tail = fmt.Sprintf("incomplete final frame after offset %d (run: acta-remote recover)", r.CommittedSize())
	}
	fmt.Printf("Acta v0.2\n\nFile\n----\n")
	fmt.Printf("file id:   %s\nfeatures:  %s\nschema id: %d\nsize:      %d bytes\nblocks:    %d\nrows:      %d\nprimary:   %s\ntail:      %s\n",
		hex.EncodeToString(id[:]), features, s.ID, fi.Size(), len(r.Blocks()), rows, primary, tail)
	fmt.Printf("\nSchema\n------\n")
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tName\tType\tNullable\tPrimary")
	for _, c := range s.Columns {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", c.ID, c.Name, c.Type, yesNo(c.Nullable), yesNo(c.ID == s.Primary))
	}
	tw.Flush()
	fmt.Printf("\nBlocks\n------\n")
	tw = tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "Seq\tOffset\tBytes\tRows\tBase Row\tPrimary Min\tPrimary Max\tSorted")
	for _, b := range r.Blocks() {
		base := "-"
		if r.RowIDs() {
			base = strconv.FormatUint(b.BaseRowID, 10)
		}
		lo, hi := strconv.FormatInt(b.Min, 10), strconv.FormatInt(b.Max, 10)
		if s.Primary == 0 {
			lo, hi = "-", "-"
		}
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\n", b.Seq, b.Offset, b.Bytes, b.Rows, base, lo, hi, yesNo(b.Sorted))
	}
	tw.Flush()
	return exitOK
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
