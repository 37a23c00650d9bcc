package app_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskhook/taskhook/app"
	"github.com/taskhook/taskhook/app/apptest"
	"github.com/taskhook/taskhook/callbacks/receivertest"
	"github.com/taskhook/taskhook/client"
	"github.com/taskhook/taskhook/store"
	"github.com/taskhook/taskhook/store/storetest"
)

// storedField is one hash field of the test's keys.
type storedField struct{ key, field, value string }

// hashFields is every field of every hash under the test's prefix.
func hashFields(t *testing.T, rdb *redis.Client, sc store.Config) []storedField {
	t.Helper()
	ctx := context.Background()
	var out []storedField
	iter := rdb.Scan(ctx, 0, sc.Prefix+"*", 1000).Iterator()
	for iter.Next(ctx) {
		key := iter.Val()
		if typ, _ := rdb.Type(ctx, key).Result(); typ != "hash" {
			continue
		}
		vals, _ := rdb.HGetAll(ctx, key).Result()
		for f, v := range vals {
			out = append(out, storedField{key, f, v})
		}
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// secretsSetup is a session notifying a receiver, a task in it, and a
// hook of the task that checks an HMAC signature.
type secretsSetup struct {
	rc         *receivertest.Receiver
	endpointID string
	epSecret   string
	taskID     string
	hookID     string
	hookToken  string
}

const hookSecret = "hook-verify-secret-0123456789abcdef"

func setUpSecrets(t *testing.T, srv *apptest.Server, owner *client.Client) secretsSetup {
	t.Helper()
	ctx := context.Background()
	rc := receivertest.New(t, nil)
	ses, task := apptest.NotifyingSessionWithTask(t, ctx, owner, []client.EndpointRequest{{URL: rc.URL, Kinds: []string{"task.message"}}})
	hook, err := owner.CreateHook(ctx, client.CreateHookInput{TaskID: task.TaskID,
		Verify: &client.HookVerify{Scheme: "hmac-sha256", Secret: hookSecret, Header: "X-Sig"}})
	if err != nil {
		t.Fatal(err)
	}
	return secretsSetup{rc: rc, endpointID: ses.Notify[0].EndpointID, epSecret: ses.Notify[0].Secret,
		taskID: task.TaskID, hookID: hook.HookID, hookToken: hook.Token}
}

// postSigned posts a body signed with the hook's secret to a server's
// callback route and fails the test, naming the post what, unless it is
// accepted.
func postSigned(t *testing.T, base, token, body, what string) {
	t.Helper()
	mac := hmac.New(sha256.New, []byte(hookSecret))
	mac.Write([]byte(body))
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/callback/"+token, strings.NewReader(body))
	req.Header.Set("X-Sig", hex.EncodeToString(mac.Sum(nil)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("%s: %d", what, resp.StatusCode)
	}
}

// messageDelivered posts a task message and waits for its delivery, which
// must verify with the endpoint's secret.
func messageDelivered(t *testing.T, owner *client.Client, s secretsSetup, text string) {
	t.Helper()
	ctx := context.Background()
	if _, err := owner.Message(ctx, s.taskID, text, nil); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(20 * time.Second)
	for {
		changed := s.rc.Changed()
		for _, d := range s.rc.Got() {
			if !bytes.Contains(d.Body, []byte(text)) {
				continue
			}
			if _, err := client.VerifyNotification(s.epSecret, d.Header, d.Body); err != nil {
				t.Fatalf("the delivery does not verify: %v", err)
			}
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("no delivery of %q", text)
		}
	}
}

// Hook verification secrets and notification endpoint secrets are kept
// sealed: a scan of the test's keys finds neither in clear, hook posts and
// deliveries still verify, and secrets written in clear the old way still
// work and are sealed when first read.
func TestStoredSecretsSealed(t *testing.T) {
	t.Parallel()
	sc := storetest.Standalone(t)
	cfg := app.Config{AllowPrivateTargets: true, NotifyRetryBase: 10 * time.Millisecond}
	srv := apptest.Start(t, sc, cfg)
	owner := srv.Client(t, "alice")
	rdb := storetest.Redis(t, sc)
	s := setUpSecrets(t, srv, owner)

	postSigned(t, srv.URL, s.hookToken, `{"n":1}`, "a signed post")
	postSigned(t, srv.URL, s.hookToken, `{"n":2}`, "a second signed post")
	messageDelivered(t, owner, s, "sealed-1")
	scanClear(t, srv, hookSecret, s.epSecret, strings.TrimPrefix(s.epSecret, "whsec_"))

	// The old way: both secrets in clear, as stored before they were sealed.
	var hookCfg, epSecret storedField
	for _, f := range hashFields(t, rdb, sc) {
		switch {
		case f.field == "cfg" && strings.Contains(f.value, s.hookID):
			hookCfg = f
		case f.field == "sec:"+s.endpointID:
			epSecret = f
		}
	}
	if hookCfg.key == "" || epSecret.key == "" {
		t.Fatalf("the hook's config or the endpoint's secret is not stored where expected")
	}
	var plain map[string]any
	if err := json.Unmarshal([]byte(hookCfg.value), &plain); err != nil {
		t.Fatal(err)
	}
	if _, sealed := plain["vs"]; !sealed {
		t.Fatalf("the hook config has no sealed secret: %s", hookCfg.value)
	}
	delete(plain, "vs")
	plain["v"].(map[string]any)["secret"] = hookSecret
	raw, _ := json.Marshal(plain)
	ctx := context.Background()
	if err := rdb.HSet(ctx, hookCfg.key, "cfg", raw).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.HSet(ctx, epSecret.key, epSecret.field, s.epSecret).Err(); err != nil {
		t.Fatal(err)
	}

	// Another replica (no cached config) reads them: they work, and are
	// sealed again.
	other := apptest.Start(t, sc, cfg)
	postSigned(t, other.URL, s.hookToken, `{"n":3}`, "a signed post against a plain stored secret")
	postSigned(t, other.URL, s.hookToken, `{"n":4}`, "a signed post after the secret was sealed again")
	messageDelivered(t, owner, s, "plain-then-sealed")
	scanClear(t, srv, hookSecret, s.epSecret, strings.TrimPrefix(s.epSecret, "whsec_"))
}

// scanClear fails when any value of the server's keys holds a secret, or
// when the server keeps no key at all.
func scanClear(t *testing.T, srv *apptest.Server, secrets ...string) {
	t.Helper()
	stored := srv.Stored(t)
	if len(stored) == 0 {
		t.Fatal("the server keeps no key")
	}
	for key, value := range stored {
		for _, s := range secrets {
			if strings.Contains(value, s) {
				t.Fatalf("a secret is in clear under %s", key)
			}
		}
	}
}

// A create that registers an endpoint, repeated with its Idempotency-Key,
// shows the same secret again, and the answer kept for that repeat is
// sealed like the secret itself.
func TestEndpointSecretReplaySealed(t *testing.T) {
	t.Parallel()
	sc := storetest.Standalone(t)
	srv := apptest.Start(t, sc, app.Config{AllowPrivateTargets: true})
	owner := srv.Client(t, "alice")
	ctx := context.Background()
	rc := receivertest.New(t, nil)
	in := client.CreateSessionInput{Notify: []client.EndpointRequest{{URL: rc.URL}}}
	first, err := owner.CreateSession(ctx, in, client.WithIdempotencyKey("ses-1"))
	if err != nil {
		t.Fatal(err)
	}
	again, err := owner.CreateSession(ctx, in, client.WithIdempotencyKey("ses-1"))
	if err != nil || again.SessionID != first.SessionID || again.Notify[0].Secret != first.Notify[0].Secret {
		t.Fatalf("the repeat: %+v %v", again, err)
	}
	task, err := owner.CreateTask(ctx, client.CreateTaskInput{SessionID: first.SessionID,
		Notify: []client.EndpointRequest{{URL: rc.URL}}}, client.WithIdempotencyKey("task-1"))
	if err != nil {
		t.Fatal(err)
	}
	taskAgain, err := owner.CreateTask(ctx, client.CreateTaskInput{SessionID: first.SessionID,
		Notify: []client.EndpointRequest{{URL: rc.URL}}}, client.WithIdempotencyKey("task-1"))
	if err != nil || taskAgain.Notify[0].Secret != task.Notify[0].Secret {
		t.Fatalf("the task's repeat: %+v %v", taskAgain, err)
	}
	added, err := owner.AddSessionEndpoint(ctx, first.SessionID, client.EndpointRequest{URL: rc.URL + "/2"}, client.WithIdempotencyKey("ep-1"))
	if err != nil {
		t.Fatal(err)
	}
	addedAgain, err := owner.AddSessionEndpoint(ctx, first.SessionID, client.EndpointRequest{URL: rc.URL + "/2"}, client.WithIdempotencyKey("ep-1"))
	if err != nil || addedAgain.Secret != added.Secret {
		t.Fatalf("the add's repeat: %+v %v", addedAgain, err)
	}
	var secrets []string
	for _, s := range []string{first.Notify[0].Secret, task.Notify[0].Secret, added.Secret} {
		secrets = append(secrets, s, strings.TrimPrefix(s, "whsec_"))
	}
	scanClear(t, srv, secrets...)
}
