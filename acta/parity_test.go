package acta

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Files built to break exactly one rule that the reference implementation
// (chengus/Acta rust/) enforces, with every CRC recomputed, so that only the
// rule under test can refuse them; and files in forms the reference does not
// write but a literal reading of the spec allows.

// replaceSchemaFrame returns file with its schema frame rebuilt from header
// and payload (CRCs and trailer computed); the data frames follow unchanged.
func replaceSchemaFrame(t *testing.T, file, header, payload []byte) []byte {
	t.Helper()
	old := int64(le.Uint32(file[schemaFrameOffset+16:])) + int64(le.Uint64(file[schemaFrameOffset+24:])) + frameOverhead
	out := append([]byte(nil), file[:schemaFrameOffset]...)
	out = buildFrame(out, frameSchema, 0, header, payload)
	return append(out, file[schemaFrameOffset+old:]...)
}

// schemaParts returns copies of the schema frame's header and payload.
func schemaParts(file []byte) (header, payload []byte) {
	hl := int64(le.Uint32(file[schemaFrameOffset+16:]))
	pl := int64(le.Uint64(file[schemaFrameOffset+24:]))
	h := file[schemaFrameOffset+prefixSize:][:hl]
	p := file[schemaFrameOffset+prefixSize+hl:][:pl]
	return append([]byte(nil), h...), append([]byte(nil), p...)
}

func writeFile(t *testing.T, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "f.acta")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// wantCorruptAt opens path and wants a corruption error at offset at whose
// reason holds frag.
func wantCorruptAt(t *testing.T, path string, at int64, frag string) {
	t.Helper()
	r, err := Open(path)
	if err == nil {
		r.Close()
		t.Fatalf("open accepted the file, want corruption %q at %d", frag, at)
	}
	var ce *CorruptionError
	if !errors.As(err, &ce) || ce.Offset != at || !strings.Contains(ce.Reason, frag) {
		t.Fatalf("open: %v, want corruption at offset %d mentioning %q", err, at, frag)
	}
	if err := Validate(path, ValidateStructural); !IsCorruption(err) {
		t.Fatalf("validate: %v, want corruption", err)
	}
}

// TestSchemaPayloadBeyondDescriptors: a schema payload longer than its
// column count's descriptors is corrupt (§7), even when the extra bytes are
// a well-formed descriptor; the unmodified rebuild still opens.
func TestSchemaPayloadBeyondDescriptors(t *testing.T) {
	base := filepath.Join(t.TempDir(), "base.acta")
	writeTS(t, base, WriterOptions{}, []int64{1, 2, 3})
	file, _ := os.ReadFile(base)
	header, payload := schemaParts(file)
	poff := int64(schemaFrameOffset + prefixSize + len(header))

	same := writeFile(t, replaceSchemaFrame(t, file, header, payload))
	if err := Validate(same, ValidateFull); err != nil {
		t.Fatalf("rebuilt schema frame: %v", err)
	}
	// Eight extra bytes: not padding (each descriptor carries its own).
	extra := append(append([]byte(nil), payload...), 1, 2, 3, 4, 5, 6, 7, 8)
	wantCorruptAt(t, writeFile(t, replaceSchemaFrame(t, file, header, extra)), poff+int64(len(payload)), "schema descriptors end after")
	// A whole third descriptor while the header still counts two.
	third := append(append([]byte(nil), payload...), payload[:le.Uint32(payload)]...)
	wantCorruptAt(t, writeFile(t, replaceSchemaFrame(t, file, header, third)), poff+int64(len(payload)), "schema descriptors end after")
	// Eight zero bytes are refused alike: they are not any descriptor's padding.
	zeros := append(append([]byte(nil), payload...), make([]byte, 8)...)
	wantCorruptAt(t, writeFile(t, replaceSchemaFrame(t, file, header, zeros)), poff+int64(len(payload)), "schema descriptors end after")
}

// TestSchemaHeaderLength: the schema frame header is exactly 24 bytes (§7);
// the reference refuses a longer one.
func TestSchemaHeaderLength(t *testing.T) {
	base := filepath.Join(t.TempDir(), "base.acta")
	writeTS(t, base, WriterOptions{}, []int64{1, 2, 3})
	file, _ := os.ReadFile(base)
	header, payload := schemaParts(file)
	long := append(append([]byte(nil), header...), make([]byte, 8)...)
	wantCorruptAt(t, writeFile(t, replaceSchemaFrame(t, file, long, payload)), schemaFrameOffset+16, "schema frame header is 32 bytes, want 24")
}
