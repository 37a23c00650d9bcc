package main

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/taskhook/taskhook/client"
)

// listener is the agent's ear: the session it opens for a task registers
// a notification endpoint here, so the agent hears the task's questions,
// messages and end without holding a long-poll open. With -publish it is
// the tool's endpoint, where the executor hears of new tasks (tool.go). It
// verifies every delivery's signature (client.NotificationHandler) and
// drops repeats.
type listener struct {
	url    string
	secret atomic.Value // string, set once the endpoint is registered
	server *http.Server
	heard  func(client.Event)
	seen   map[string]bool
	events chan client.Event
	done   chan struct{} // closed once every event taken has been handed to heard
	ended  chan struct{} // closed once a task.terminal has been heard
}

// listen starts the listener on addr ("127.0.0.1:0" picks a port); heard
// gets each new event.
func listen(addr string, log *slog.Logger, heard func(client.Event)) (*listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	l := &listener{url: "http://" + ln.Addr().String() + "/notifications", heard: heard, seen: map[string]bool{},
		events: make(chan client.Event, 64), done: make(chan struct{}), ended: make(chan struct{})}
	events := l.events
	mux := http.NewServeMux()
	mux.Handle("POST /notifications", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The secret is only known once the session exists, and the first
		// event cannot come before it.
		secret, _ := l.secret.Load().(string)
		client.NotificationHandler(secret, func(_ context.Context, ev client.Event) error {
			events <- ev
			return nil
		}).ServeHTTP(w, r)
	}))
	l.server = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := l.server.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("notification listener stopped", "err", err)
		}
	}()
	go func() {
		defer close(l.done)
		for ev := range events {
			key := ev.SessionID + "/" + ev.ID // an event id is unique within its session
			if l.seen[key] {
				continue
			}
			l.seen[key] = true
			log.Info("heard an event", "type", ev.Type, "task", ev.TaskID, "revision", ev.Revision)
			if l.heard != nil {
				l.heard(ev)
			}
			if ev.Type == client.EventTaskTerminal {
				select {
				case <-l.ended:
				default:
					close(l.ended)
				}
			}
		}
	}()
	return l, nil
}

// endpoint is the notification endpoint a new session registers.
func (l *listener) endpoint() []client.EndpointRequest {
	return []client.EndpointRequest{{URL: l.url}}
}

// heardEnd waits until a task.terminal has been heard, or ctx ends: the
// agent's work is done when it has heard the end, which a delivery may
// bring a moment after the executor's last command.
func (l *listener) heardEnd(ctx context.Context) {
	select {
	case <-l.ended:
	case <-ctx.Done():
	}
}

// close stops the listener: the deliveries under way finish, and every
// event they brought is handed to heard before it returns.
func (l *listener) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = l.server.Shutdown(ctx)
	close(l.events)
	<-l.done
}
