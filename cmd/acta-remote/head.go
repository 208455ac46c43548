package main

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/acta-remote/acta-remote/acta"
)

func init() {
	register("head", "print the first rows of an Acta file (-n N, --json)", runHead)
}

func runHead(args []string) int {
	fa, err := parseFileArgs(args, []string{"json"}, []string{"n"})
	if err != nil {
		fmt.Fprintf(os.Stderr, "acta-remote head: %v\nusage: acta-remote head FILE [-n N] [--json]\n", err)
		return exitError
	}
	n := 10
	if v, ok := fa.vals["n"]; ok {
		if n, err = strconv.Atoi(v); err != nil || n < 0 {
			fmt.Fprintf(os.Stderr, "acta-remote head: -n %q is not a row count\n", v)
			return exitError
		}
	}
	r, err := acta.Open(fa.file)
	if err != nil {
		return fileExit("head", err)
	}
	defer r.Close()
	s := r.Schema()
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	asJSON := fa.bools["json"]
	if !asJSON {
		names := make([]string, len(s.Columns))
		for i, c := range s.Columns {
			names[i] = c.Name
		}
		fmt.Fprintln(out, strings.Join(names, "\t"))
	}
	// The scan decodes blocks lazily, so only the blocks needed are read.
	sc, err := r.Scan(acta.ScanOptions{})
	if err != nil {
		return fileExit("head", err)
	}
	for left := n; left > 0; {
		b, err := sc.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			out.Flush()
			return fileExit("head", err)
		}
		for row := 0; row < b.Rows && left > 0; row, left = row+1, left-1 {
			if asJSON {
				out.WriteByte('{')
				for i, c := range s.Columns {
					if i > 0 {
						out.WriteByte(',')
					}
					k, _ := json.Marshal(c.Name)
					out.Write(k)
					out.WriteByte(':')
					out.WriteString(cellJSON(c, b.Columns[i], row))
				}
				out.WriteString("}\n")
				continue
			}
			for i, c := range s.Columns {
				if i > 0 {
					out.WriteByte('\t')
				}
				out.WriteString(cellText(c, b.Columns[i], row))
			}
			out.WriteByte('\n')
		}
	}
	return exitOK
}

// cellJSON renders one value as issue 2 specifies: integers, timestamps,
// dates and decimals (unscaled) as raw integers; floats as numbers with
// NaN/+Inf/-Inf as strings; text as strings; binary as lowercase hex.
func cellJSON(c acta.Column, a acta.Array, row int) string {
	if !a.Validity().Valid(row) {
		return "null"
	}
	switch x := a.(type) {
	case *acta.FixedArray[float64]:
		return floatJSON(x.Values[row], 64)
	case *acta.FixedArray[float32]:
		return floatJSON(float64(x.Values[row]), 32)
	case *acta.BytesArray:
		v := x.Value(row)
		if c.Type.ID == acta.TypeUTF8 || c.Type.ID == acta.TypeCategorical {
			return jsonString(string(v))
		}
		return `"` + hex.EncodeToString(v) + `"`
	}
	return cellText(c, a, row)
}

func floatJSON(f float64, bits int) string {
	switch {
	case math.IsNaN(f):
		return `"NaN"`
	case math.IsInf(f, 1):
		return `"+Inf"`
	case math.IsInf(f, -1):
		return `"-Inf"`
	}
	return strconv.FormatFloat(f, 'g', -1, bits)
}

func jsonString(s string) string {
	var sb strings.Builder
	enc := json.NewEncoder(&sb)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	return strings.TrimSuffix(sb.String(), "\n")
}

// cellText renders one value for the table output.
func cellText(c acta.Column, a acta.Array, row int) string {
	if !a.Validity().Valid(row) {
		return "null"
	}
	switch x := a.(type) {
	case *acta.FixedArray[bool]:
		return strconv.FormatBool(x.Values[row])
	case *acta.FixedArray[int8]:
		return strconv.FormatInt(int64(x.Values[row]), 10)
	case *acta.FixedArray[int16]:
		return strconv.FormatInt(int64(x.Values[row]), 10)
	case *acta.FixedArray[int32]:
		return strconv.FormatInt(int64(x.Values[row]), 10)
	case *acta.FixedArray[int64]:
		return strconv.FormatInt(x.Values[row], 10)
	case *acta.FixedArray[uint8]:
		return strconv.FormatUint(uint64(x.Values[row]), 10)
	case *acta.FixedArray[uint16]:
		return strconv.FormatUint(uint64(x.Values[row]), 10)
	case *acta.FixedArray[uint32]:
		return strconv.FormatUint(uint64(x.Values[row]), 10)
	case *acta.FixedArray[uint64]:
		return strconv.FormatUint(x.Values[row], 10)
	case *acta.FixedArray[float32]:
		return strconv.FormatFloat(float64(x.Values[row]), 'g', -1, 32)
	case *acta.FixedArray[float64]:
		return strconv.FormatFloat(x.Values[row], 'g', -1, 64)
	case *acta.BytesArray:
		v := x.Value(row)
		if c.Type.ID == acta.TypeUTF8 || c.Type.ID == acta.TypeCategorical {
			return string(v)
		}
		return hex.EncodeToString(v)
	}
	return "?"
}
