package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/acta-remote/acta-remote/acta"
	"github.com/acta-remote/acta-remote/actastore"
)

// Salvage (Acta v0.2 §13.2) for one file or a whole data directory. It
// never presents a gap as complete: a salvage that skipped damaged bytes
// exits exitLossy and its report lists every skipped range.

// Outcomes of one file's salvage.
const (
	stateIntact        = "intact"        // nothing to do
	stateSalvaged      = "salvaged"      // a new file written (in place with --data-dir)
	stateRepaired      = "repaired"      // --data-dir: only an interrupted final frame, cut in place
	stateUnsalvageable = "unsalvageable" // corrupt and nothing written (e.g. the schema frame is damaged)
	stateUnsupported   = "unsupported"   // another version, an undecodable feature or a limit: not touched
	stateError         = "error"         // I/O: not (completely) done
)

// salvageResult is one file's outcome, printed as text or JSON.
type salvageResult struct {
	File        string        `json:"file"`
	Size        int64         `json:"size"`
	State       string        `json:"state"`
	Lossless    bool          `json:"lossless"` // nothing committed was lost (at most an interrupted final frame)
	Out         string        `json:"out,omitempty"`
	OutBytes    int64         `json:"out_bytes,omitempty"`
	DamagedCopy string        `json:"damaged_copy,omitempty"`
	HeadFrom    string        `json:"head_from,omitempty"`
	BlocksKept  int           `json:"blocks_kept"`
	RowsKept    int64         `json:"rows_kept"`
	LostBytes   int64         `json:"lost_bytes"`
	Skipped     []skippedJSON `json:"skipped"`
	Error       string        `json:"error,omitempty"`
}

// skippedJSON is one byte range [offset, end) not carried over.
// lost_to_seq is absent when the range runs to the end of the file, where
// how many frames (if any) were lost is unknown.
type skippedJSON struct {
	Offset      int64  `json:"offset"`
	End         int64  `json:"end"`
	Bytes       int64  `json:"bytes"`
	Kind        string `json:"kind"` // corrupt, head, incomplete_tail
	Reason      string `json:"reason"`
	LostFromSeq uint64 `json:"lost_from_seq,omitempty"`
	LostToSeq   uint64 `json:"lost_to_seq,omitempty"`
}

func (r *salvageResult) fill(rep *acta.SalvageReport) {
	if rep == nil {
		return
	}
	r.Size, r.HeadFrom, r.BlocksKept, r.RowsKept = rep.Size, rep.HeadFrom, len(rep.Blocks), rep.Rows
	r.Lossless = rep.Lossless()
	r.Skipped, r.LostBytes = []skippedJSON{}, 0
	for _, s := range rep.Skipped {
		r.Skipped = append(r.Skipped, skippedJSON{Offset: s.Offset, End: s.End, Bytes: s.Bytes(), Kind: s.Kind.String(),
			Reason: s.Reason, LostFromSeq: s.LostFrom, LostToSeq: s.LostTo})
		if s.Kind != acta.SkipIncompleteTail {
			r.LostBytes += s.Bytes()
		}
	}
}

// failed records err as the result's state.
func (r *salvageResult) failed(err error) {
	r.Error = err.Error()
	switch {
	case errors.Is(err, acta.ErrUnsupportedVersion), errors.Is(err, acta.ErrUnsupported), errors.Is(err, acta.ErrLimit):
		r.State = stateUnsupported
	case errors.Is(err, acta.ErrCorrupt):
		r.State = stateUnsalvageable
	default:
		r.State = stateError
	}
}

// exit is the result's exit code.
func (r *salvageResult) exit() int {
	switch r.State {
	case stateIntact, stateRepaired:
		return exitOK
	case stateSalvaged:
		if r.Lossless {
			return exitOK
		}
		return exitLossy
	case stateUnsalvageable:
		return exitCorrupt
	case stateUnsupported:
		return exitUnsupported
	}
	return exitError
}

// print writes r as text.
func (r *salvageResult) print(w io.Writer) {
	fmt.Fprintf(w, "file:      %s\nsize:      %d bytes\n", r.File, r.Size)
	state := r.State
	switch {
	case r.State == stateSalvaged && r.Lossless:
		state += " without loss (only an interrupted final frame was cut)"
	case r.State == stateSalvaged:
		state += fmt.Sprintf(" WITH LOSS: %d damaged bytes skipped (listed below)", r.LostBytes)
	case r.State == stateRepaired:
		state += " (an interrupted final frame was cut; nothing committed was lost)"
	}
	fmt.Fprintf(w, "state:     %s\n", state)
	if r.Error != "" {
		fmt.Fprintf(w, "error:     %s\n", r.Error)
	}
	switch {
	case r.State == stateIntact:
		fmt.Fprintf(w, "blocks:    %d (%d rows); nothing to salvage\n", r.BlocksKept, r.RowsKept)
	case r.Error == "" || r.BlocksKept > 0:
		fmt.Fprintf(w, "kept:      %d blocks, %d rows\n", r.BlocksKept, r.RowsKept)
	}
	if r.HeadFrom != "" {
		fmt.Fprintf(w, "schema:    taken from %s (the file's own was damaged); every kept block checked against it\n", r.HeadFrom)
	}
	for _, s := range r.Skipped {
		lost := ""
		switch {
		case s.LostFromSeq > 0 && s.LostToSeq == s.LostFromSeq:
			lost = fmt.Sprintf("; frame %d lost", s.LostFromSeq)
		case s.LostFromSeq > 0 && s.LostToSeq > 0:
			lost = fmt.Sprintf("; frames %d-%d lost", s.LostFromSeq, s.LostToSeq)
		case s.LostFromSeq > 0:
			lost = fmt.Sprintf("; frames from %d on may be lost (how many, if any, is unknown)", s.LostFromSeq)
		}
		fmt.Fprintf(w, "skipped:   [%d, %d) %d bytes %s: %s%s\n", s.Offset, s.End, s.Bytes, s.Kind, s.Reason, lost)
	}
	if r.Out != "" {
		fmt.Fprintf(w, "out:       %s (%d bytes, fully validated)\n", r.Out, r.OutBytes)
	}
	if r.DamagedCopy != "" {
		fmt.Fprintf(w, "original:  kept as %s\n", r.DamagedCopy)
	}
}

func printJSON(v any) {
	enc := json.NewEncoder(os.Stdout)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

// salvageFile salvages path into out (default path + ".salvaged"), which
// must not exist. An intact file is reported and nothing is written.
func salvageFile(path, out, schemaFrom string, asJSON bool) int {
	if out == "" {
		out = path + ".salvaged"
	}
	opts := acta.SalvageOptions{SchemaFrom: schemaFrom}
	res := &salvageResult{File: path, Skipped: []skippedJSON{}}
	plan, err := acta.PlanSalvage(path, opts)
	res.fill(plan)
	switch {
	case err != nil:
		res.failed(err)
	case plan.Intact():
		res.State = stateIntact
	default:
		rep, err := acta.Salvage(path, out, opts)
		res.fill(rep)
		if err != nil {
			res.failed(err)
			break
		}
		res.State, res.Out, res.OutBytes = stateSalvaged, rep.Out, rep.OutSize
	}
	if asJSON {
		printJSON(res)
	} else {
		res.print(os.Stdout)
		if errors.Is(err, acta.ErrSalvageNeedsSchema) && schemaFrom == "" {
			fmt.Fprintf(os.Stderr, "acta-remote recover: name a healthy file of the same schema (for a series file, another series file) with --schema-from\n")
		}
	}
	return res.exit()
}

// dataDirReport is the --data-dir outcome: counts of every file checked,
// and the files that were not intact.
type dataDirReport struct {
	DataDir       string           `json:"data_dir"`
	FilesChecked  int              `json:"files_checked"`
	Intact        int              `json:"intact"`
	Repaired      int              `json:"repaired"`
	Lossy         int              `json:"salvaged_with_loss"`
	Unsalvageable int              `json:"unsalvageable"`
	Unsupported   int              `json:"unsupported"`
	Errors        int              `json:"errors"`
	Files         []*salvageResult `json:"files"`
}

// salvageDataDir checks every Acta file of the store in dir with the
// store's LOCK held, so it never runs beside a server: an interrupted final
// frame is cut in place, a damaged file is salvaged in place (the original
// kept aside under a name the store ignores), and a file it cannot salvage
// or decode is left untouched. The exit code is the worst outcome: I/O 1,
// unsalvageable 2, unsupported 3, loss 4, else 0.
func salvageDataDir(dir, schemaFrom string, asJSON bool) int {
	series := actastore.ActaFileDirs(dir)[0]
	if fi, err := os.Stat(series); err != nil || !fi.IsDir() {
		fmt.Fprintf(os.Stderr, "acta-remote recover: %s is not an acta-remote data directory (no %s)\n", dir, series)
		return exitError
	}
	lock, err := actastore.LockDataDir(dir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "acta-remote recover: %v (stop the server first)\n", err)
		return exitError
	}
	defer lock.Close()
	files, err := storeActaFiles(dir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "acta-remote recover: %v\n", err)
		return exitError
	}
	rep := &dataDirReport{DataDir: dir, FilesChecked: len(files), Files: []*salvageResult{}}
	worst := exitOK
	rank := map[int]int{exitOK: 0, exitLossy: 1, exitUnsupported: 2, exitCorrupt: 3, exitError: 4}
	for _, path := range files {
		res := salvageInPlace(path, acta.SalvageOptions{SchemaFrom: schemaFrom})
		switch {
		case res.State == stateIntact:
			rep.Intact++
			continue
		case res.State == stateRepaired, res.State == stateSalvaged && res.Lossless:
			rep.Repaired++
		case res.State == stateSalvaged:
			rep.Lossy++
		case res.State == stateUnsalvageable:
			rep.Unsalvageable++
		case res.State == stateUnsupported:
			rep.Unsupported++
		default:
			rep.Errors++
		}
		rep.Files = append(rep.Files, res)
		if c := res.exit(); rank[c] > rank[worst] {
			worst = c
		}
		if !asJSON {
			res.print(os.Stdout)
			fmt.Println()
		}
	}
	if asJSON {
		printJSON(rep)
	} else {
		fmt.Printf("%s: %d files checked: %d intact, %d repaired (interrupted final frame cut), %d salvaged WITH LOSS, %d unsalvageable, %d unsupported, %d errors\n",
			dir, rep.FilesChecked, rep.Intact, rep.Repaired, rep.Lossy, rep.Unsalvageable, rep.Unsupported, rep.Errors)
	}
	return worst
}

// storeActaFiles lists the store's Acta files under dir, in name order.
func storeActaFiles(dir string) ([]string, error) {
	var files []string
	for _, root := range actastore.ActaFileDirs(dir) {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if errors.Is(err, fs.ErrNotExist) && p == root {
				return filepath.SkipDir
			}
			if err != nil {
				return err
			}
			if d.Type().IsRegular() && strings.HasSuffix(d.Name(), actastore.ActaFileExt) {
				files = append(files, p)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", root, err)
		}
	}
	return files, nil
}

// salvageInPlace checks one store file and repairs or salvages it where it
// lies. The salvaged file is written under a temporary name (the store
// deletes it at start-up if a crash leaves it), validated, the original is
// linked to a name the store ignores, and only then is the new file renamed
// over the old, with the directory synced: a crash at any point leaves the
// old file or the new one in place, and the original is kept either way.
func salvageInPlace(path string, opts acta.SalvageOptions) *salvageResult {
	res := &salvageResult{File: path, Skipped: []skippedJSON{}}
	plan, err := acta.PlanSalvage(path, opts)
	res.fill(plan)
	switch {
	case err != nil:
		res.failed(err)
		return res
	case plan.Intact():
		res.State = stateIntact
		return res
	case plan.Lossless():
		// Only an interrupted final frame: cut it as the store itself
		// would; the file then holds every committed block unchanged.
		if _, err := acta.RepairIncompleteTail(path); err != nil {
			res.failed(err)
			return res
		}
		res.State = stateRepaired
		return res
	}
	tmp, aside := actastore.SalvageNames(path)
	os.Remove(tmp) // leftovers of an interrupted run; the LOCK keeps anyone else out
	os.Remove(tmp + ".tmp")
	rep, err := acta.Salvage(path, tmp, opts)
	res.fill(rep)
	if err != nil {
		res.failed(err)
		return res
	}
	kept, err := keepAside(path, aside)
	if err != nil {
		os.Remove(tmp)
		res.failed(fmt.Errorf("keep the original aside (nothing changed): %w", err))
		return res
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		res.failed(fmt.Errorf("rename the salvaged file into place (original unchanged, also kept as %s): %w", kept, err))
		return res
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		res.failed(fmt.Errorf("sync %s after the rename (the salvaged file is in place): %w", filepath.Dir(path), err))
		return res
	}
	res.State, res.Out, res.OutBytes, res.DamagedCopy = stateSalvaged, path, rep.OutSize, kept
	return res
}

// keepAside gives the file at path a second name, aside (or aside.2, ...
// when taken), durably: a hard link, or a synced copy where links are not
// supported. A name already linking to path (an interrupted earlier run) is
// reused.
func keepAside(path, aside string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	for i := 1; i <= 100; i++ {
		name := aside
		if i > 1 {
			name = fmt.Sprintf("%s.%d", aside, i)
		}
		if ai, err := os.Stat(name); err == nil {
			if os.SameFile(fi, ai) {
				return name, nil
			}
			continue
		}
		if err := os.Link(path, name); err != nil {
			if errors.Is(err, fs.ErrExist) {
				continue
			}
			if err := copyFile(path, name); err != nil {
				return "", err
			}
		}
		return name, syncDir(filepath.Dir(name))
	}
	return "", fmt.Errorf("%s and 99 numbered variants exist; remove old copies", aside)
}

// copyFile copies src to a new file dst and syncs it.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		os.Remove(dst)
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		os.Remove(dst)
		return err
	}
	return out.Close()
}

// syncDir makes directory entries in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
