package main

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/taskhook/taskhook/client"
)

// This file is the fake outside system: a "devbox" service that runs a job
// in a sandbox and reports on it by posting to the callback URL it was
// given, signed the Standard Webhooks way (https://www.standardwebhooks.com).
// It lives in this process only so that the example runs on its own; the
// executor in main.go talks to it as it would to a remote service: start a
// job, tell it to continue, stop it.
//
// With requireTokens, the devbox API takes only calls carrying a token its
// OAuth provider issued (checked at the provider's introspection endpoint,
// as a resource server would): the executor gets the requester's token
// through taskhook's provider sign-in first.

// Job states, in the order a job goes through them.
const (
	statePending           = "pending"
	stateRunning           = "running"
	stateAttentionRequired = "attention-required"
	stateComplete          = "complete"
	stateStopped           = "stopped"
	stateErrored           = "errored"
)

// Jobs the devbox can run (the "job" of a task's input); each goes through
// the states its own way.
const (
	jobMigrate           = "migrate"             // asks once, then completes (the default)
	jobMigrateAndReindex = "migrate-and-reindex" // asks a follow-up question before it completes
	jobBrokenMigration   = "broken-migration"    // errors out while running
	jobLongMigration     = "long-migration"      // runs until it is stopped
)

// jobs are the jobs the devbox knows, the default first.
var jobs = []string{jobMigrate, jobMigrateAndReindex, jobBrokenMigration, jobLongMigration}

// jobState is the body of every post. Seq is the job's own sequence number:
// the order the states happened in, whatever order the posts arrive in.
type jobState struct {
	Job      string `json:"job"`
	Seq      int    `json:"seq"`
	State    string `json:"state"`
	Question string `json:"question,omitempty"` // with attention-required
	Summary  string `json:"summary,omitempty"`  // with complete
	Error    string `json:"error,omitempty"`    // with errored
}

// newWebhookSecret makes a Standard Webhooks secret: "whsec_" and 32 random
// bytes in base64.
func newWebhookSecret() string {
	key := make([]byte, 32)
	_, _ = rand.Read(key) // never fails (crypto/rand)
	return "whsec_" + base64.StdEncoding.EncodeToString(key)
}

// devbox is the service. Its zero value is not usable: call newDevbox.
type devbox struct {
	poster     *client.Client // posts to callback URLs; it has no taskhook token and needs none
	log        *slog.Logger
	introspect string       // the provider's introspection URL; "": every call is taken
	http       *http.Client // calls the provider

	mu   sync.Mutex
	jobs []*job
	wg   sync.WaitGroup
}

func newDevbox(log *slog.Logger) *devbox {
	return &devbox{poster: client.New("", ""), log: log, http: &http.Client{Timeout: 10 * time.Second}}
}

// requireTokens makes the devbox take only calls with a token that the
// provider's introspection endpoint (RFC 7662) says is active.
func (d *devbox) requireTokens(introspectURL string) *devbox {
	d.introspect = introspectURL
	return d
}

// errUnauthorized is the devbox refusing a call's token: its 401.
var errUnauthorized = errors.New("devbox: 401 the token is missing or not active")

// authorize checks a call's bearer token with the provider.
func (d *devbox) authorize(ctx context.Context, token string) error {
	if d.introspect == "" {
		return nil
	}
	if token == "" {
		return errUnauthorized
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.introspect,
		strings.NewReader(url.Values{"token": {token}}.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := d.http.Do(req)
	if err != nil {
		return fmt.Errorf("devbox: ask the provider about a token: %w", err)
	}
	defer resp.Body.Close()
	var out struct {
		Active bool `json:"active"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&out) != nil || !out.Active {
		return errUnauthorized
	}
	return nil
}

// job is one run in the sandbox.
type job struct {
	id       string
	kind     string // one of the job* names
	callback string
	key      []byte      // the decoded webhook secret
	resume   chan string // the decision that lets a job waiting for attention go on
	dev      *devbox

	stop     chan struct{} // closed by Stop
	stopOnce sync.Once
	done     chan struct{} // closed when run returns
	stopped  bool          // it ended because it was told to stop; read after done

	mu   sync.Mutex
	sent []delivery // every delivery made, in order
}

// delivery is one post as made, kept so that it can be made again.
type delivery struct {
	id   string // webhook-id: the same for every attempt of one delivery
	body []byte
}

// StartJob starts a job of a kind (one of the job* names; "" for
// jobMigrate) that reports to callbackURL, signing with secret, for the
// caller whose bearer token is token. It runs until it completes, errors,
// is stopped, finds the hook closed, or ctx ends. A token the devbox does
// not take is errUnauthorized.
func (d *devbox) StartJob(ctx context.Context, token, kind, callbackURL, secret string) (string, error) {
	if err := d.authorize(ctx, token); err != nil {
		return "", err
	}
	if kind == "" {
		kind = jobMigrate
	}
	if !slices.Contains(jobs, kind) {
		return "", fmt.Errorf("devbox: no job %q", kind)
	}
	key, err := base64.StdEncoding.DecodeString(secret[len("whsec_"):])
	if err != nil {
		return "", fmt.Errorf("devbox: the secret is not whsec_ and base64: %w", err)
	}
	d.mu.Lock()
	j := &job{
		id: "job-" + strconv.Itoa(len(d.jobs)+1), kind: kind, callback: callbackURL, key: key,
		resume: make(chan string, 1), dev: d, stop: make(chan struct{}), done: make(chan struct{}),
	}
	d.jobs = append(d.jobs, j)
	d.mu.Unlock()
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		defer close(j.done)
		err := j.run(ctx)
		if errors.Is(err, errStopped) {
			j.stopped = true
			d.log.Info("devbox job stopped", "job", j.id)
			return
		}
		if err != nil {
			d.log.Warn("devbox job ended early", "job", j.id, "err", err)
		}
	}()
	return j.id, nil
}

// errStopped ends a job that was told to stop.
var errStopped = errors.New("devbox: the job was stopped")

// Stop stops a job and returns once it has stopped (at once when it had
// ended already), or when ctx ends first.
func (d *devbox) Stop(ctx context.Context, jobID string) error {
	j := d.job(jobID)
	if j == nil {
		return fmt.Errorf("devbox: no job %s", jobID)
	}
	j.stopOnce.Do(func() { close(j.stop) })
	select {
	case <-j.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Stopped reports whether the job has ended because it was told to stop.
func (d *devbox) Stopped(jobID string) bool {
	j := d.job(jobID)
	if j == nil {
		return false
	}
	select {
	case <-j.done:
		return j.stopped
	default:
		return false
	}
}

// Continue gives a job waiting for attention the human's decision:
// "continue", or anything else to stop it.
func (d *devbox) Continue(jobID, decision string) error {
	j := d.job(jobID)
	if j == nil {
		return fmt.Errorf("devbox: no job %s", jobID)
	}
	select {
	case j.resume <- decision:
		return nil
	default:
		return fmt.Errorf("devbox: job %s already has a decision", jobID)
	}
}

// Wait waits for every job to end.
func (d *devbox) Wait() { d.wg.Wait() }

func (d *devbox) job(id string) *job {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, j := range d.jobs {
		if j.id == id {
			return j
		}
	}
	return nil
}

// run is the job's life, with the troubles real webhook senders have: the
// same delivery twice (an answer got lost, so it is sent again under the
// same webhook-id; the hook's dedupe hides it) and an old state arriving
// after a newer one (a late redelivery under a new webhook-id; the executor
// skips it by its seq). A job told to stop ends with errStopped and posts
// nothing more: whoever stopped it knows.
func (j *job) run(ctx context.Context) error {
	if err := j.post(ctx, jobState{State: statePending}); err != nil {
		return err
	}
	if err := j.post(ctx, jobState{State: stateRunning}); err != nil {
		return err
	}
	if err := j.Redeliver(ctx); err != nil { // a duplicate
		return err
	}
	switch j.kind {
	case jobBrokenMigration:
		return j.post(ctx, jobState{State: stateErrored, Error: "duplicate key value in users.email"})
	case jobLongMigration:
		return j.pause(ctx, nil)
	}

	if err := j.post(ctx, jobState{State: stateAttentionRequired,
		Question: "The migration will drop the table legacy_users. Go on?"}); err != nil {
		return err
	}
	if err := j.resendLate(ctx, 2); err != nil { // "running" again, stale
		return err
	}
	var decision string
	if err := j.pause(ctx, &decision); err != nil {
		return err
	}
	if decision != "continue" {
		return j.post(ctx, jobState{State: stateStopped, Summary: "stopped before the migration"})
	}
	if err := j.post(ctx, jobState{State: stateRunning}); err != nil {
		return err
	}
	if err := j.Redeliver(ctx); err != nil { // another duplicate
		return err
	}
	summary := "migrated 1,204 users; dropped legacy_users"
	if j.kind == jobMigrateAndReindex {
		if err := j.post(ctx, jobState{State: stateAttentionRequired,
			Question: "Rebuild the search index now? The API is read-only while it runs."}); err != nil {
			return err
		}
		if err := j.pause(ctx, &decision); err != nil {
			return err
		}
		if decision == "continue" {
			summary += "; rebuilt the search index"
		} else {
			summary += "; left the search index as it was"
		}
	}
	return j.post(ctx, jobState{State: stateComplete, Summary: summary})
}

// pause waits for a decision (into decision), or, with decision nil, for
// nothing: until the job is told to stop or ctx ends.
func (j *job) pause(ctx context.Context, decision *string) error {
	var resume chan string
	if decision != nil {
		resume = j.resume
	}
	select {
	case d := <-resume:
		*decision = d
		return nil
	case <-j.stop:
		return errStopped
	case <-ctx.Done():
		return ctx.Err()
	}
}

// post sends the job's next state as a new delivery.
func (j *job) post(ctx context.Context, st jobState) error {
	j.mu.Lock()
	st.Job, st.Seq = j.id, len(j.sent)+1
	body, err := json.Marshal(st)
	if err != nil {
		j.mu.Unlock()
		return err
	}
	d := delivery{id: fmt.Sprintf("%s-msg-%d", j.id, len(j.sent)+1), body: body}
	j.sent = append(j.sent, d)
	j.mu.Unlock()
	return j.deliver(ctx, d)
}

// Redeliver sends the last delivery again, under the same webhook-id.
func (j *job) Redeliver(ctx context.Context) error {
	j.mu.Lock()
	d := j.sent[len(j.sent)-1]
	j.mu.Unlock()
	return j.deliver(ctx, d)
}

// resendLate sends state seq again as a new delivery (a new webhook-id).
func (j *job) resendLate(ctx context.Context, seq int) error {
	j.mu.Lock()
	d := delivery{id: fmt.Sprintf("%s-msg-%d-late", j.id, seq), body: j.sent[seq-1].body}
	j.mu.Unlock()
	return j.deliver(ctx, d)
}

// deliver posts one delivery, trying again a few times when the hook does
// not answer. Every attempt carries the same webhook-id, so a retry of a
// post that was in fact stored is recognised and not stored twice.
func (j *job) deliver(ctx context.Context, d delivery) error {
	var err error
	for attempt := 1; attempt <= 5; attempt++ {
		var res *client.PostResult
		res, err = j.dev.poster.Post(ctx, j.callback, d.body, j.sign(d, time.Now()))
		if err == nil {
			j.dev.log.Debug("devbox posted", "job", j.id, "delivery", d.id, "duplicate", res.Duplicate)
			return nil
		}
		var e *client.Error
		if errors.As(err, &e) && e.Status != http.StatusTooManyRequests && e.Status < 500 {
			return err // 410 (nobody listens any more), 401, 404: trying again will not help
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(attempt) * 200 * time.Millisecond):
		}
	}
	return err
}

// sign makes the Standard Webhooks headers: the signature is the
// HMAC-SHA256 of "id.timestamp.body" with the secret's key, in base64.
func (j *job) sign(d delivery, now time.Time) http.Header {
	ts := strconv.FormatInt(now.Unix(), 10)
	mac := hmac.New(sha256.New, j.key)
	mac.Write([]byte(d.id + "." + ts + "."))
	mac.Write(d.body)
	return http.Header{
		"Content-Type":      {"application/json"},
		"Webhook-Id":        {d.id},
		"Webhook-Timestamp": {ts},
		"Webhook-Signature": {"v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))},
	}
}
