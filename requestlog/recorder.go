package requestlog

import (
	"net/http"
	"time"
)

// Recorder is the http.ResponseWriter a request is answered through: it
// remembers the status and the bytes written, and passes Flush through
// (for event streams).
type Recorder struct {
	http.ResponseWriter
	status int
	bytes  int
	start  time.Time
	// parked: the handler parked the request (a long-poll); it is logged
	// and counted when its answer is written, not when the handler returns.
	parked bool
}

// NewRecorder is the Recorder of a parked request's answer, written to w;
// start is when the request came (its Recorder's Start).
func NewRecorder(w http.ResponseWriter, start time.Time) *Recorder {
	return &Recorder{ResponseWriter: w, start: start}
}

// RecorderOf is the request's Recorder (the Observer's), under any
// wrappers that say what they wrap; nil when it has none.
func RecorderOf(w http.ResponseWriter) *Recorder {
	for {
		switch v := w.(type) {
		case *Recorder:
			return v
		case interface{ Unwrap() http.ResponseWriter }:
			w = v.Unwrap()
		default:
			return nil
		}
	}
}

// Status is the status written, 0 before any.
func (s *Recorder) Status() int { return s.status }

// Start is when the request came.
func (s *Recorder) Start() time.Time { return s.start }

// Park says the handler parked the request: it is settled when its answer
// is written, through a NewRecorder, not when the handler returns.
func (s *Recorder) Park() { s.parked = true }

func (s *Recorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *Recorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	n, err := s.ResponseWriter.Write(b)
	s.bytes += n
	return n, err
}

// Flush flushes through any wrappers under the Recorder that say what they
// wrap (Unwrap) without flushing themselves, such as the body guard's.
func (s *Recorder) Flush() {
	_ = http.NewResponseController(s.ResponseWriter).Flush()
}

func (s *Recorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }
