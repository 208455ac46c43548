// Package testkit holds the helpers that tests of several packages share,
// so that one copy of each is kept and fixed. Only _test.go files import
// it; it imports no package of acta-remote, so any package's tests may use
// it without an import cycle.
//
//   - disk.go: MountTmpfs and FillDisk, a real small file system and a
//     real ENOSPC for disk-full tests.
//   - child.go: RunAndKill, the crash tests' child: the test binary run
//     again as a child that acknowledges work on stdout and is killed with
//     SIGKILL; Ready, Fail and Acknowledge, the child's side.
//   - wire.go: Remote-Write 1.0/2.0 and Remote-Read request bodies
//     (protobuf in one snappy block) and prompb label lists.
//   - http.go: Send and Post, one HTTP request answered with its status,
//     body and header.
//   - read.go: ReadResponse and Frames, the two Remote-Read answers
//     decoded with Prometheus's own types and chunked reader.
package testkit
