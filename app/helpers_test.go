package app_test

import (
	"context"
	"errors"
	"testing"

	"github.com/taskhook/taskhook/client"
)

func asError(err error, target **client.Error) bool { return errors.As(err, target) }

// sessionWithTask opens a session and starts a task in it.
func sessionWithTask(t *testing.T, cl *client.Client) (*client.Session, *client.Task) {
	t.Helper()
	ctx := context.Background()
	ses, err := cl.CreateSession(ctx, client.CreateSessionInput{})
	if err != nil {
		t.Fatal(err)
	}
	task, err := cl.CreateTask(ctx, client.CreateTaskInput{SessionID: ses.SessionID})
	if err != nil {
		t.Fatal(err)
	}
	return ses, task
}
