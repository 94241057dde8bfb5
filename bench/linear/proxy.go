package linear

import (
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"time"
)

// LatencyProxy forwards TCP connections to a target and delays every chunk
// of bytes, in both directions, by Base plus a random share of Jitter. Each
// direction keeps its byte order (a chunk is written no earlier than the one
// before it), so a pipelined Redis connection stays correct and only slower:
// the replies of concurrent commands come back later and spread apart, which
// is what widens the windows in which requests overlap.
type LatencyProxy struct {
	Addr   string // where the proxy listens, host:port
	Target string
	Base   time.Duration
	Jitter time.Duration

	ln    net.Listener
	mu    sync.Mutex
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// StartLatencyProxy listens on a free loopback port and forwards to target.
func StartLatencyProxy(target string, base, jitter time.Duration) (*LatencyProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &LatencyProxy{Addr: ln.Addr().String(), Target: target, Base: base, Jitter: jitter, ln: ln, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Close stops listening and cuts every forwarded connection.
func (p *LatencyProxy) Close() {
	_ = p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *LatencyProxy) track(c net.Conn, add bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !add {
		delete(p.conns, c)
		return true
	}
	if p.conns == nil {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *LatencyProxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			p.mu.Lock()
			for c := range p.conns {
				_ = c.Close()
			}
			p.conns = nil
			p.mu.Unlock()
			return
		}
		server, err := net.Dial("tcp", p.Target)
		if err != nil {
			_ = client.Close()
			continue
		}
		if !p.track(client, true) || !p.track(server, true) {
			_ = client.Close()
			_ = server.Close()
			continue
		}
		p.wg.Add(2)
		go p.pipe(server, client)
		go p.pipe(client, server)
	}
}

// chunk is bytes read at one moment, due to be written at due.
type chunk struct {
	b   []byte
	due time.Time
}

// pipe copies src to dst with the delay; when either side ends it closes
// both, as a cut connection would.
func (p *LatencyProxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	q := make(chan chunk, 1024)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for c := range q {
			time.Sleep(time.Until(c.due))
			if _, err := dst.Write(c.b); err != nil {
				return
			}
		}
	}()
	buf := make([]byte, 32<<10)
	var last time.Time
	for {
		n, err := src.Read(buf)
		if n > 0 {
			d := p.Base
			if p.Jitter > 0 {
				d += rand.N(p.Jitter)
			}
			due := time.Now().Add(d)
			if due.Before(last) {
				due = last // keep the byte order of the direction
			}
			last = due
			select {
			case q <- chunk{b: append([]byte(nil), buf[:n]...), due: due}:
			case <-done:
				err = io.ErrClosedPipe
			}
		}
		if err != nil {
			break
		}
	}
	close(q)
	<-done
	_ = dst.Close()
	_ = src.Close()
	p.track(dst, false)
	p.track(src, false)
}
