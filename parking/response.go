package parking

import (
	"bytes"
	"net"
	"net/http"
	"strconv"
	"time"
)

// lateResponse is the http.ResponseWriter of a held request's answer: it
// keeps what the answer writes, then sends it on the connection as net/http
// would have sent it, with the length of the body.
type lateResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (l *lateResponse) Header() http.Header { return l.header }

func (l *lateResponse) WriteHeader(status int) {
	if l.status == 0 {
		l.status = status
	}
}

func (l *lateResponse) Write(b []byte) (int, error) {
	l.WriteHeader(http.StatusOK)
	return l.body.Write(b)
}

// send writes the response to c; without keep it says the connection
// closes. The bytes are those net/http writes: the handler's headers in
// order, then Date, Content-Length and Connection.
func (l *lateResponse) send(c net.Conn, keep bool) error {
	l.WriteHeader(http.StatusOK)
	text := http.StatusText(l.status)
	if text == "" {
		text = "status code " + strconv.Itoa(l.status)
	}
	var b bytes.Buffer
	b.Grow(256 + l.body.Len())
	b.WriteString("HTTP/1.1 " + strconv.Itoa(l.status) + " " + text + "\r\n")
	_ = l.header.Write(&b)
	b.WriteString("Date: " + time.Now().UTC().Format(http.TimeFormat) + "\r\n")
	b.WriteString("Content-Length: " + strconv.Itoa(l.body.Len()) + "\r\n")
	if !keep {
		b.WriteString("Connection: close\r\n")
	}
	b.WriteString("\r\n")
	b.Write(l.body.Bytes())
	_, err := c.Write(b.Bytes())
	return err
}

// savedHeader is a response header kept while its request is held, in a
// smaller form than a map: names and values in turn.
type savedHeader []string

func saveHeader(h http.Header) savedHeader {
	var s savedHeader
	for name, values := range h {
		for _, v := range values {
			s = append(s, name, v)
		}
	}
	return s
}

func (s savedHeader) header() http.Header {
	h := make(http.Header, len(s)/2)
	for i := 0; i+1 < len(s); i += 2 {
		h[s[i]] = append(h[s[i]], s[i+1])
	}
	return h
}
