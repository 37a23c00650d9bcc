package storetest

import (
	"bytes"
	"io"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/taskhook/taskhook/store"
)

// Proxy is a TCP proxy in front of a Redis server that sees what the
// service sends: it counts commands by name and can cut a connection right
// after Redis answered a command, before the answer reaches the client, as
// a network failing at the worst moment would.
type Proxy struct {
	ln       net.Listener
	upstream string

	mu         sync.Mutex
	counts     map[string]int
	marked     map[[2]string]int // by command name and an argument its request holds
	cutOn      string            // cut the connection that sends this command, after Redis answers it
	cuts       int
	replyBytes int64
	conns      []net.Conn
}

// StartProxy listens on loopback and forwards every connection to upstream;
// it stops when the test ends.
func StartProxy(t testing.TB, upstream string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{ln: ln, upstream: upstream, counts: map[string]int{}, marked: map[[2]string]int{}}
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// StandaloneBehindProxy is Standalone with the store's traffic going
// through a proxy of its own.
func StandaloneBehindProxy(t testing.TB) (store.Config, *Proxy) {
	t.Helper()
	cfg := Standalone(t)
	addr, db, _ := strings.Cut(strings.TrimPrefix(cfg.URL, "redis://"), "/")
	p := StartProxy(t, addr)
	cfg.URL = "redis://" + p.Addr() + "/" + db
	return cfg, p
}

// Addr is the proxy's address, to put in the store's URL.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Count is how many commands named name (lower case, as go-redis sends them)
// went through.
func (p *Proxy) Count(name string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.counts[name]
}

// Watch makes CountWith count the commands named name one of whose
// arguments is marker (the flag a script takes for the records it keeps,
// say), from now on.
func (p *Proxy) Watch(name, marker string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.marked[[2]string{name, marker}]; !ok {
		p.marked[[2]string{name, marker}] = 0
	}
}

// CountWith is how many commands named name with the argument marker went
// through since Watch(name, marker): the task scripts that keep a command
// record, say, apart from the service's background work. A request is
// read as one piece: a command cut across two reads of the connection may
// be missed.
func (p *Proxy) CountWith(name, marker string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.marked[[2]string{name, marker}]
}

// CutAfterReply makes the next connection that sends the command name lose
// its connection once Redis has run it, before the reply reaches the client.
func (p *Proxy) CutAfterReply(name string) {
	p.mu.Lock()
	p.cutOn = name
	p.mu.Unlock()
}

// ReplyBytes is how many bytes Redis has sent back so far.
func (p *Proxy) ReplyBytes() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.replyBytes
}

// Cuts is how many connections CutAfterReply has cut.
func (p *Proxy) Cuts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cuts
}

func (p *Proxy) close() {
	p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
}

func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		u, err := net.Dial("tcp", p.upstream)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, u)
		p.mu.Unlock()
		cut := make(chan struct{}, 1)
		go p.forwardRequests(c, u, cut)
		go p.forwardReplies(u, c, cut)
	}
}

// forwardRequests copies client to Redis, counting command names (RESP bulk
// strings that follow an array header).
func (p *Proxy) forwardRequests(c, u net.Conn, cut chan<- struct{}) {
	buf := make([]byte, 64<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			p.observe(buf[:n], cut)
			if _, werr := u.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	u.Close()
	c.Close()
}

func (p *Proxy) observe(chunk []byte, cut chan<- struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	lines := bytes.Split(chunk, []byte("\r\n"))
	for i, line := range lines {
		name := string(bytes.ToLower(line))
		switch name {
		case "evalsha", "eval", "get", "hmget", "xadd", "xread", "ping", "set":
			p.counts[name]++
			if p.cutOn != "" && p.cutOn == name {
				p.cutOn = ""
				cut <- struct{}{}
			}
			for w := range p.marked {
				if w[0] == name && requestHolds(lines[i+1:], w[1]) {
					p.marked[w]++
				}
			}
		}
	}
}

// requestHolds reports whether the rest of a request (its lines after the
// command name, up to the next request's array header) has marker as one
// of its arguments.
func requestHolds(rest [][]byte, marker string) bool {
	for _, l := range rest {
		if len(l) > 0 && l[0] == '*' {
			return false
		}
		if string(l) == marker {
			return true
		}
	}
	return false
}

// forwardReplies copies Redis to the client; after a cut was asked for on
// this connection, the next reply is swallowed and the connection closed.
func (p *Proxy) forwardReplies(u, c net.Conn, cut <-chan struct{}) {
	buf := make([]byte, 64<<10)
	for {
		n, err := u.Read(buf)
		if n > 0 {
			p.mu.Lock()
			p.replyBytes += int64(n)
			p.mu.Unlock()
			select {
			case <-cut:
				p.mu.Lock()
				p.cuts++
				p.mu.Unlock()
				c.Close()
				u.Close()
				return
			default:
			}
			if _, werr := c.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	_, _ = io.Copy(io.Discard, u)
	c.Close()
}
