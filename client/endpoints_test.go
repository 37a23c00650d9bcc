package client_test

import (
	"net/http"
	"slices"
	"testing"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/callbacks/receivertest"
	"github.com/taskhook/taskhook/client"
)

// The endpoint calls add, list and remove a session's and a task's
// notification endpoints; only the owner may, and the secret is shown once.
func TestEndpointCalls(t *testing.T) {
	eachStore(t, app.Config{AllowPrivateTargets: true}, func(t *testing.T, e *env) {
		ctx := testContext(t)
		recv := receivertest.New(t, nil)
		task := newTask(t, ctx, e.alice)

		sesEp, err := e.alice.AddSessionEndpoint(ctx, task.SessionID, client.EndpointRequest{URL: recv.URL})
		if err != nil {
			t.Fatal(err)
		}
		taskEp, err := e.alice.AddTaskEndpoint(ctx, task.TaskID, client.EndpointRequest{URL: recv.URL, Kinds: []string{client.EventTaskMessage}})
		if err != nil {
			t.Fatal(err)
		}
		if sesEp.Secret == "" || taskEp.Secret == "" || !slices.Equal(sesEp.Kinds, client.DefaultNotifyKinds) {
			t.Fatalf("the added endpoints: %+v %+v", sesEp, taskEp)
		}
		for name, list := range map[string]func() ([]client.Endpoint, error){
			"session": func() ([]client.Endpoint, error) { return e.alice.SessionEndpoints(ctx, task.SessionID) },
			"task":    func() ([]client.Endpoint, error) { return e.alice.TaskEndpoints(ctx, task.TaskID) },
		} {
			eps, err := list()
			if err != nil || len(eps) != 1 || eps[0].Secret != "" || eps[0].Status != "active" {
				t.Fatalf("the %s's endpoints: %+v %v", name, eps, err)
			}
		}
		if _, err := e.bob.SessionEndpoints(ctx, task.SessionID); !client.IsCode(err, client.CodeNotFound) {
			t.Fatalf("another principal lists the endpoints: %v", err)
		}
		if _, err := e.bob.RemoveTaskEndpoint(ctx, task.TaskID, taskEp.EndpointID); !client.IsCode(err, client.CodeNotFound) {
			t.Fatalf("another principal removes an endpoint: %v", err)
		}
		if left, err := e.alice.RemoveTaskEndpoint(ctx, task.TaskID, taskEp.EndpointID); err != nil || len(left) != 0 {
			t.Fatalf("endpoints left: %+v %v", left, err)
		}
		if _, err := e.alice.AddSessionEndpoint(ctx, task.SessionID, client.EndpointRequest{URL: recv.URL + "/second"}); err != nil {
			t.Fatal(err)
		}
		left, err := e.alice.RemoveSessionEndpoint(ctx, task.SessionID, sesEp.EndpointID)
		if err != nil || len(left) != 1 || left[0].URL != recv.URL+"/second" {
			t.Fatalf("endpoints left: %+v %v", left, err)
		}
		_, err = e.alice.RemoveSessionEndpoint(ctx, task.SessionID, sesEp.EndpointID)
		wantCode(t, err, http.StatusNotFound, client.CodeNotFound)
		eps, err := e.alice.TaskEndpoints(ctx, task.TaskID)
		if err != nil || len(eps) != 0 {
			t.Fatalf("endpoints after removal: %+v %v", eps, err)
		}
	})
}
