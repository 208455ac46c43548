package remoteread

import (
	"bytes"
	"net"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"

	"github.com/acta-remote/acta-remote/actastore"
	"github.com/acta-remote/acta-remote/internal/testkit"
)

// countingListener counts the writes of the connections it accepts.
type countingListener struct {
	net.Listener
	writes *atomic.Int32
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	return countingConn{c, l.writes}, err
}

type countingConn struct {
	net.Conn
	writes *atomic.Int32
}

func (c countingConn) Write(b []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(b)
}

// A streamed answer that fits in one write goes out in one: headers,
// frames and the end together (it was two, the frames flushed and then
// the end, a tenth of a one-series read). A small one gets a
// Content-Length.
func TestSmallStreamedAnswerOneWrite(t *testing.T) {
	for _, n := range []int{1, 40} { // 40 series: chunked, still one write
		var series []*memHistSeries
		for i := range n {
			series = append(series, &memHistSeries{lset: labels.FromStrings("__name__", "a", "i", string(rune('A'+i))),
				floats: []actastore.Sample{{T: 1, V: 2}, {T: 2, V: 3}}})
		}
		q := &histQuerier{series: series}
		var writes atomic.Int32
		srv := httptest.NewUnstartedServer(New(q, readLimits, nil, nil))
		srv.Listener = countingListener{srv.Listener, &writes}
		srv.Start()
		a := post(t, srv.URL, testkit.ReadRequest(bothTypes, q0()))
		srv.Close()
		frames := 0
		err := testkit.Frames(bytes.NewReader(a.Body), 1<<24, func(cresp *prompb.ChunkedReadResponse) error {
			frames += len(cresp.ChunkedSeries)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if frames != n {
			t.Fatalf("%d series: %d in the answer", n, frames)
		}
		if w := writes.Load(); w != 1 {
			t.Errorf("%d series (%d bytes): %d writes, want 1", n, len(a.Body), w)
		}
		if n == 1 && a.Header.Get("Content-Length") == "" {
			t.Errorf("one series: no Content-Length (headers %v)", a.Header)
		}
	}
}
