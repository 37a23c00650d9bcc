// Command receiver is a notification endpoint to try taskhook's
// notifications with: it prints each event it is sent, one JSON line each,
// and answers 204. It needs nothing but Go.
//
//	go run ./examples/receiver -listen 127.0.0.1:9000
//
// Register http://127.0.0.1:9000/ as a session's notify endpoint (a server
// on the same machine needs TASKHOOK_ALLOW_PRIVATE_TARGETS=true to call it).
// The answer to that registration shows the endpoint's secret once: start
// the receiver again with -secret whsec_... and it also checks each
// delivery's Standard Webhooks signature, answering 401 to anything not
// signed with it.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/taskhook/taskhook/client"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:9000", "address to listen on")
	secret := flag.String("secret", "", "the endpoint's whsec_ secret: check every delivery's signature")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Fprintf(os.Stderr, "receiver: listening on http://%s/\n", ln.Addr())
	if err := serve(ctx, ln, *secret, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// serve answers notifications on ln until ctx ends, writing each event to
// out as a line of JSON.
func serve(ctx context.Context, ln net.Listener, secret string, out io.Writer) error {
	srv := &http.Server{Handler: handler(secret, out), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// handler prints what arrives; with a secret, only what is signed with it.
func handler(secret string, out io.Writer) http.Handler {
	print := func(_ context.Context, ev client.Event) error {
		line, err := json.Marshal(ev)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(out, "%s\n", line)
		return err
	}
	if secret != "" {
		return client.NotificationHandler(secret, print)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev client.Event
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, client.MaxNotificationBytes)).Decode(&ev); err != nil {
			http.Error(w, "not an event", http.StatusBadRequest)
			return
		}
		if err := print(r.Context(), ev); err != nil {
			http.Error(w, "not printed", http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
}
