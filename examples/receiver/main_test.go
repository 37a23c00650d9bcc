package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/client"
	"github.com/taskhook/taskhook/stdwebhooks"
)

// The receiver, registered as a session's endpoint with its secret, prints
// the task's events as the server delivers them, and refuses a post not
// signed with the secret.
func TestReceiverPrintsSignedEvents(t *testing.T) {
	srv := apptest.Embedded(t, app.Config{AllowPrivateTargets: true})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	secret := stdwebhooks.NewSecret()
	out, lines := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- serve(ctx, ln, secret, lines) }()

	c := srv.Client(t, "alice")
	ses, err := c.CreateSession(ctx, client.CreateSessionInput{Notify: []client.EndpointRequest{
		{URL: "http://" + ln.Addr().String() + "/", Secret: secret}}})
	if err != nil {
		t.Fatal(err)
	}
	task, err := c.CreateTask(ctx, client.CreateTaskInput{SessionID: ses.SessionID, Label: "try the receiver"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Complete(ctx, task.TaskID, map[string]any{"ok": true}); err != nil {
		t.Fatal(err)
	}
	read := bufio.NewScanner(out)
	for read.Scan() {
		var ev client.Event
		if err := json.Unmarshal(read.Bytes(), &ev); err != nil {
			t.Fatalf("printed %q, not an event: %v", read.Text(), err)
		}
		if ev.Type == client.EventTaskTerminal && ev.TaskID == task.TaskID {
			break
		}
	}
	if err := read.Err(); err != nil {
		t.Fatal(err)
	}

	unsigned, err := http.Post("http://"+ln.Addr().String()+"/", "application/json",
		strings.NewReader(`{"id":"1-0","type":"task.terminal"}`))
	if err != nil {
		t.Fatal(err)
	}
	unsigned.Body.Close()
	if unsigned.StatusCode != http.StatusUnauthorized {
		t.Errorf("an unsigned post: %d, want 401", unsigned.StatusCode)
	}
	cancel()
	go func() { _, _ = io.Copy(io.Discard, out) }() // a late delivery must not block the shutdown
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
