package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// ---- HTTP client ----------------------------------------------------------

// countingConn counts the bytes read from a connection.
type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// newHTTPClient returns a keep-alive client for up to conns parallel
// connections. With wire set, every connection counts the bytes it reads
// into wire and keep-alive is off, so one request is one connection.
func newHTTPClient(conns int, wire *atomic.Int64) *http.Client {
	d := &net.Dialer{Timeout: 5 * time.Second}
	tr := &http.Transport{
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     time.Minute,
		DisableCompression:  true,
	}
	if wire != nil {
		tr.DisableKeepAlives = true
		tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return countingConn{Conn: c, n: wire}, nil
		}
	} else {
		tr.DialContext = d.DialContext
	}
	return &http.Client{Transport: tr}
}

// drain reads and closes a response body.
func drain(r io.ReadCloser) {
	_, _ = io.Copy(io.Discard, r)
	_ = r.Close()
}

// readLines reads NDJSON lines from r, calling fn with each (without its
// newline; the slice is reused). It stops when fn returns false.
func readLines(r io.Reader, fn func(line []byte) bool) error {
	br := newLineReader(r)
	for {
		line, err := br.next()
		if len(line) > 0 && !fn(line) {
			return nil
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

type lineReader struct {
	r   io.Reader
	buf []byte
	pos int
	end int
	out []byte
}

func newLineReader(r io.Reader) *lineReader { return &lineReader{r: r, buf: make([]byte, 64<<10)} }

// next returns the next line (without "\n"); at EOF a trailing fragment is
// returned with io.EOF.
func (l *lineReader) next() ([]byte, error) {
	l.out = l.out[:0]
	for {
		if l.pos < l.end {
			if i := bytes.IndexByte(l.buf[l.pos:l.end], '\n'); i >= 0 {
				l.out = append(l.out, l.buf[l.pos:l.pos+i]...)
				l.pos += i + 1
				return l.out, nil
			}
			l.out = append(l.out, l.buf[l.pos:l.end]...)
		}
		l.pos, l.end = 0, 0
		n, err := l.r.Read(l.buf)
		l.end = n
		if err != nil && n == 0 {
			return l.out, err
		}
	}
}
