package app_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/callbacks/receivertest"
	"github.com/taskhook/taskhook/client"
	"github.com/taskhook/taskhook/store/storetest"
)

// pushSigned checks a delivery's Standard Webhooks signature with secret,
// computed here on its own: HMAC-SHA256 of "id.timestamp.body".
func pushSigned(secret string, d receivertest.Delivery) bool {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return false
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(d.Header.Get("webhook-id") + "." + d.Header.Get("webhook-timestamp") + "."))
	m.Write(d.Body)
	want := "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
	return slices.Contains(strings.Fields(d.Header.Get("webhook-signature")), want)
}

// A push config on a task is sent each change of the task's status as an
// A2A StreamResponse, with its token and signed; reads show it without
// either; another principal does not see it; deleted, it is gone.
func TestA2APushConfigsDeliverStatusUpdates(t *testing.T) {
	apptest.EachBackend(t, notifyConfig(), func(t *testing.T, srv *apptest.Server) {
		ctx := context.Background()
		card, err := agentcard.DefaultResolver.Resolve(ctx, srv.URL)
		if err != nil || !card.Capabilities.PushNotifications {
			t.Fatalf("the public card offers no push configs: %+v %v", card, err)
		}
		for _, binding := range a2aBindings {
			t.Run(string(binding), func(t *testing.T) {
				rest := srv.Client(t, "push-owner")
				cl := a2aClient(t, srv, binding, "push-owner")
				_, task := apptest.SessionWithTask(t, ctx, rest, client.CreateTaskInput{})
				recv := receivertest.New(t, nil)
				const token = "push-token-1"
				created, err := cl.CreateTaskPushConfig(ctx, &a2a.PushConfig{TaskID: a2a.TaskID(task.TaskID), URL: recv.URL, Token: token})
				if err != nil {
					t.Fatal(err)
				}
				if created.ID == "" || created.URL != recv.URL || created.Token != token || created.Auth == nil ||
					!strings.HasPrefix(created.Auth.Credentials, "whsec_") {
					t.Fatalf("the created config: %+v", created)
				}
				got, err := cl.GetTaskPushConfig(ctx, &a2a.GetTaskPushConfigRequest{TaskID: a2a.TaskID(task.TaskID), ID: created.ID})
				if err != nil || got.URL != recv.URL || got.Token != "" || got.Auth != nil {
					t.Fatalf("the config read back: %+v %v", got, err)
				}
				stranger := a2aClient(t, srv, binding, "push-stranger")
				if _, err := stranger.ListTaskPushConfigs(ctx, &a2a.ListTaskPushConfigRequest{TaskID: a2a.TaskID(task.TaskID)}); !errors.Is(err, a2a.ErrTaskNotFound) {
					t.Fatalf("another principal lists the configs: %v", err)
				}

				driveTaskLife(t, rest, task.TaskID)
				log, err := rest.TaskEvents(ctx, task.TaskID, client.EventsParams{Limit: 100})
				if err != nil {
					t.Fatal(err)
				}
				var want []string
				for _, e := range log.Events {
					if slices.Contains([]string{"task.status", "task.message", "task.terminal"}, e.Type) {
						want = append(want, e.ID)
					}
				}
				waitDeliveries(t, recv, len(want))
				var ids []string
				states := map[a2a.TaskState]bool{}
				for _, d := range recv.Got() {
					if d.Header.Get("A2A-Notification-Token") != token || !pushSigned(created.Auth.Credentials, d) {
						t.Fatalf("a delivery without its token or signature: %v", d.Header)
					}
					var sr a2a.StreamResponse
					if err := json.Unmarshal(d.Body, &sr); err != nil {
						t.Fatalf("a delivery is no StreamResponse: %v %s", err, d.Body)
					}
					up, ok := sr.Event.(*a2a.TaskStatusUpdateEvent)
					if !ok || string(up.TaskID) != task.TaskID || up.ContextID != task.SessionID {
						t.Fatalf("a delivery is no status update of the task: %s", d.Body)
					}
					states[up.Status.State] = true
					ids = append(ids, d.ID())
				}
				slices.Sort(ids)
				if !slices.Equal(ids, want) || !states[a2a.TaskStateInputRequired] || !states[a2a.TaskStateCompleted] {
					t.Fatalf("deliveries %v in states %v, want the events %v", ids, states, want)
				}

				if err := cl.DeleteTaskPushConfig(ctx, &a2a.DeleteTaskPushConfigRequest{TaskID: a2a.TaskID(task.TaskID), ID: created.ID}); err != nil {
					t.Fatal(err)
				}
				left, err := cl.ListTaskPushConfigs(ctx, &a2a.ListTaskPushConfigRequest{TaskID: a2a.TaskID(task.TaskID)})
				if err != nil || len(left) != 0 {
					t.Fatalf("configs left after the delete: %+v %v", left, err)
				}
				if _, err := cl.GetTaskPushConfig(ctx, &a2a.GetTaskPushConfigRequest{TaskID: a2a.TaskID(task.TaskID), ID: created.ID}); !errors.Is(err, a2a.ErrInvalidParams) {
					t.Fatalf("a deleted config read: %v", err)
				}
			})
		}
	})
}

// A push config whose receiver answers 410 is dead after that call: the
// task's endpoint list says so, and the config is still listed.
func TestA2APushConfigGoneIsDead(t *testing.T) {
	apptest.EachBackend(t, notifyConfig(), func(t *testing.T, srv *apptest.Server) {
		ctx := context.Background()
		rest := srv.Client(t, "push-gone")
		cl := a2aClient(t, srv, a2a.TransportProtocolJSONRPC, "push-gone")
		_, task := apptest.SessionWithTask(t, ctx, rest, client.CreateTaskInput{})
		recv := receivertest.New(t, receivertest.Status(http.StatusGone))
		created, err := cl.CreateTaskPushConfig(ctx, &a2a.PushConfig{TaskID: a2a.TaskID(task.TaskID), URL: recv.URL, Token: "t"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rest.Message(ctx, task.TaskID, "are you there?", nil); err != nil {
			t.Fatal(err)
		}
		storetest.WaitFor(t, "the config's endpoint dead", func() bool {
			eps, err := rest.TaskEndpoints(ctx, task.TaskID)
			return err == nil && len(eps) == 1 && eps[0].EndpointID == created.ID && eps[0].Status == "dead"
		})
		if n := len(recv.Got()); n != 1 {
			t.Fatalf("the receiver was called %d times, want once", n)
		}
		eps, _ := rest.TaskEndpoints(ctx, task.TaskID)
		if eps[0].Format != "a2a" || eps[0].Secret != "" {
			t.Fatalf("the endpoint as read: %+v", eps[0])
		}
		configs, err := cl.ListTaskPushConfigs(ctx, &a2a.ListTaskPushConfigRequest{TaskID: a2a.TaskID(task.TaskID)})
		if err != nil || len(configs) != 1 || configs[0].ID != created.ID {
			t.Fatalf("the configs: %+v %v", configs, err)
		}
	})
}

// A push config on a private address is refused where private targets are
// not allowed, and so is an authentication scheme other than the signature.
func TestA2APushConfigOnAPrivateAddressIsRefused(t *testing.T) {
	srv := apptest.Start(t, storetest.Embedded(t), app.Config{})
	ctx := context.Background()
	rest := srv.Client(t, "push-guarded")
	_, task := apptest.SessionWithTask(t, ctx, rest, client.CreateTaskInput{})
	for _, binding := range a2aBindings {
		cl := a2aClient(t, srv, binding, "push-guarded")
		for _, target := range []string{"http://127.0.0.1:9/", "http://10.0.0.1/", "http://169.254.169.254/"} {
			_, err := cl.CreateTaskPushConfig(ctx, &a2a.PushConfig{TaskID: a2a.TaskID(task.TaskID), URL: target})
			if !errors.Is(err, a2a.ErrInvalidParams) || !strings.Contains(err.Error(), "not allowed") {
				t.Errorf("%s: %s: %v, want invalid params saying the address is not allowed", binding, target, err)
			}
		}
		_, err := cl.CreateTaskPushConfig(ctx, &a2a.PushConfig{TaskID: a2a.TaskID(task.TaskID), URL: "http://93.184.216.34/",
			Auth: &a2a.PushAuthInfo{Scheme: "Bearer", Credentials: "x"}})
		if !errors.Is(err, a2a.ErrInvalidParams) || !strings.Contains(err.Error(), "StandardWebhooks") {
			t.Errorf("%s: a bearer config: %v, want invalid params", binding, err)
		}
	}
	if eps, err := rest.TaskEndpoints(ctx, task.TaskID); err != nil || len(eps) != 0 {
		t.Errorf("endpoints kept: %+v %v", eps, err)
	}
}
