// Package bucket is the object-storage side of acta-remote: an S3 client
// (minio-go: one well-kept module that speaks S3 to every compatible
// store, signs with SigV4, uploads large objects in parts, and is what
// Thanos's S3 provider builds on), the layout of a bucket (keys.go: one
// prefix per writer instance, objects named by their content CRC, so they
// never change), index objects describing an instance's series and files
// (index.go, records.go, state.go: full and delta objects by sequence
// number), bucket retention by age (retention.go), and reading series
// files in place (object.go: an acta.Reader whose reads are ranged GETs of
// the blocks asked for, the file's block index from a local cache,
// blockindex.go).
//
// It knows Acta only as files to upload and read; what a series file
// holds, and when a file is uploaded or deleted, is the store's
// (actastore/tier*.go). The byte layouts are drawn in
// docs/format/bucket.md.
//
// Every object read is checked: index objects by their CRC-32C, series
// files by Acta's own checksums block by block (a damaged object is an
// acta.ErrCorrupt naming its s3:// URL), uploads by reading them back
// (size and CRC-32C), whatever checksums the server keeps.
package bucket
