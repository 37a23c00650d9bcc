package app_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/client"
)

func collect(ctx context.Context, seq func(func(client.Event, error) bool), n int) ([]client.Event, error) {
	var out []client.Event
	for ev, err := range seq {
		if err != nil {
			return out, err
		}
		out = append(out, ev)
		if len(out) == n {
			break
		}
	}
	return out, ctx.Err()
}

func eventIDs(evs []client.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
}

func TestEventStreams(t *testing.T) {
	t.Parallel()
	replicas := apptest.Replicas(t, 2, app.Config{})
	a, b := replicas[0], replicas[1]
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tok := apptest.Token(t, "streamer")
	cl := client.New(a.URL, tok)
	ses, task := apptest.SessionWithTask(t, ctx, cl, client.CreateTaskInput{})
	const changes = 6
	// Two subscribers on two replicas, started before the changes.
	results := make(chan []client.Event, 2)
	for _, srv := range []*apptest.Server{a, b} {
		go func() {
			evs, _ := collect(ctx, client.New(srv.URL, tok).StreamTaskEvents(ctx, task.TaskID, ""), changes+1)
			results <- evs
		}()
	}
	for i := range changes {
		if _, err := cl.Progress(ctx, task.TaskID, client.ProgressInput{StatusMessage: client.String(fmt.Sprint(i))}); err != nil {
			t.Fatal(err)
		}
	}
	first, second := <-results, <-results
	if len(first) != changes+1 || !slices.Equal(eventIDs(first), eventIDs(second)) {
		t.Fatalf("subscribers saw %v and %v", eventIDs(first), eventIDs(second))
	}
	for i, ev := range first {
		if ev.Revision != int64(i+1) {
			t.Fatalf("event %d has revision %d", i, ev.Revision)
		}
	}
	// Resuming after an id gives exactly what follows it.
	rest, err := collect(ctx, cl.StreamTaskEvents(ctx, task.TaskID, first[2].ID), changes-2)
	if err != nil || !slices.Equal(eventIDs(rest), eventIDs(first[3:])) {
		t.Fatalf("resumed after %s: %v %v", first[2].ID, eventIDs(rest), err)
	}
	// A stream of another principal's task is a 404.
	for _, err := range a.Client(t, "other").StreamTaskEvents(ctx, task.TaskID, "") {
		if !client.IsCode(err, client.CodeNotFound) {
			t.Fatalf("foreign stream: %v", err)
		}
		break
	}
	// Draining ends open streams: shutdown does not wait for them.
	opened := make(chan struct{})
	go func() {
		for range client.New(b.URL, tok).StreamSessionEvents(ctx, ses.SessionID, "") {
			select {
			case <-opened:
			default:
				close(opened)
			}
		}
	}()
	<-opened
	stopCtx, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	if err := b.App.Stop(stopCtx); err != nil {
		t.Fatalf("stop with an open stream: %v", err)
	}
}
