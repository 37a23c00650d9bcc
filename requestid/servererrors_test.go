package requestid

import "testing"

// Only whole answers of net/http's own shape are stamped; a handler's answer
// or a piece of a body never is.
func TestServerErrorShape(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		write string
		want  string
	}{
		{"HTTP/1.1 400 Bad Request" + serverErrorHeaders + "400 Bad Request", "400 Bad Request"},
		{"HTTP/1.1 431 Request Header Fields Too Large" + serverErrorHeaders + "431 Request Header Fields Too Large",
			"431 Request Header Fields Too Large"},
		{"HTTP/1.1 400 Bad Request: missing required Host header" + serverErrorHeaders + "400 Bad Request: missing required Host header",
			"400 Bad Request: missing required Host header"},
		{"HTTP/1.1 501 Not Implemented" + serverErrorHeaders + "Unsupported transfer encoding", "501 Not Implemented"},
		// Answers of handlers: other headers, framing.
		{"HTTP/1.1 400 Bad Request\r\nContent-Type: application/json; charset=utf-8\r\nX-Request-Id: rq_1\r\n" +
			"Content-Length: 2\r\n\r\n{}", ""},
		{"HTTP/1.1 200 OK" + serverErrorHeaders + "200 OK", ""},
		{"HTTP/1.1 400 Bad Request\r\nX-Request-Id: rq_1" + serverErrorHeaders + "400 Bad Request", ""},
		{"HTTP/1.1 400 Bad Request" + serverErrorHeaders + "a body\r\n0\r\n\r\n", ""},
		{"HTTP/1.1 400 Bad Request" + serverErrorHeaders + string(make([]byte, maxServerError)), ""},
		{"data: HTTP/1.1 400 Bad Request" + serverErrorHeaders + "x", ""},
	} {
		status, ok := serverError([]byte(c.write))
		if got := string(status); ok != (c.want != "") || got != c.want {
			t.Errorf("%q: got %q %v, want %q", c.write, got, ok, c.want)
		}
	}
}
