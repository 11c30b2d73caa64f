package cloudtasksemu

import (
	"bufio"
	"bytes"
	"net"
	"sync"
	"time"
)

// http2Preface is how every HTTP/2 client connection opens (RFC 9113 §3.4); gRPC always speaks
// HTTP/2, and no HTTP/1 request line can start this way.
var http2Preface = []byte("PRI * HTTP/2.0")

// prefaceTimeout bounds how long a connection may stay silent before it is sorted.
const prefaceTimeout = 10 * time.Second

// splitListener accepts connections on one port and hands each to the gRPC or the HTTP side by
// its first bytes.
type splitListener struct {
	net.Listener
	grpc, http *chanListener
	track      func(func()) bool

	mu      sync.Mutex
	closed  bool
	pending map[net.Conn]struct{} // accepted, not yet sorted
}

func (l *splitListener) serve() {
	for {
		c, err := l.Accept()
		if err != nil {
			l.grpc.close()
			l.http.close()
			return
		}
		if !l.track(func() { l.sort(c) }) {
			c.Close()
		}
	}
}

// Close stops accepting and closes the connections still being sorted, so a client that connects
// and says nothing cannot hold Stop up for prefaceTimeout.
func (l *splitListener) Close() error {
	err := l.Listener.Close()
	l.mu.Lock()
	l.closed = true
	for c := range l.pending {
		c.Close()
	}
	l.mu.Unlock()
	return err
}

// sort peeks at the connection's first bytes without consuming them.
func (l *splitListener) sort(c net.Conn) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		c.Close()
		return
	}
	if l.pending == nil {
		l.pending = make(map[net.Conn]struct{})
	}
	l.pending[c] = struct{}{}
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		delete(l.pending, c)
		l.mu.Unlock()
	}()

	br := bufio.NewReaderSize(c, 64)
	_ = c.SetReadDeadline(time.Now().Add(prefaceTimeout))
	head, err := br.Peek(len(http2Preface))
	_ = c.SetReadDeadline(time.Time{})
	if err != nil {
		c.Close()
		return
	}
	pc := &peekedConn{Conn: c, r: br}
	dst := l.http
	if bytes.Equal(head, http2Preface) {
		dst = l.grpc
	}
	if !dst.deliver(pc) {
		c.Close()
	}
}

// peekedConn replays the peeked bytes before reading on from the connection.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *peekedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// chanListener is a net.Listener fed by splitListener.
type chanListener struct {
	addr  net.Addr
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newChanListener(addr net.Addr) *chanListener {
	return &chanListener{addr: addr, conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *chanListener) deliver(c net.Conn) bool {
	select {
	case l.conns <- c:
		return true
	case <-l.done:
		return false
	}
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *chanListener) close() { l.once.Do(func() { close(l.done) }) }

func (l *chanListener) Close() error { l.close(); return nil }

func (l *chanListener) Addr() net.Addr { return l.addr }
