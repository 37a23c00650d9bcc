// Command devbox shows hooks at work: an executor that hands a callback URL
// to an outside system and follows the job it runs there, to the end.
//
// The executor
//
//  1. opens a session and starts a task (or takes the task given with -task);
//  2. creates a hook bound to the task, requiring Standard Webhooks
//     signatures with a secret of its own;
//  3. starts a job on the "devbox" service (a fake one, in devbox.go),
//     handing it the hook's URL and the secret; the task's input names the
//     job ({"job": "migrate-and-reindex"}; see devbox.go for the others).
//     With -connection, the devbox API takes only a token of the task's
//     requester: the executor gets it with client.Token, which waits while
//     the requester signs in (the task is input_required with the sign-in's
//     authorizationUrl), and hands a token the devbox refuses to the loop
//     guard (client.Reject);
//  4. reads the hook with Hook(id).Events: each state the job posts is
//     reported as task progress, in the job's own order;
//  5. whenever the job needs attention, asks the human (RequireInput), waits
//     for the answer (WaitTask, woken only by the answer or the task's end),
//     and tells the job to go on;
//  6. completes the task with the job's summary, or fails it when the job
//     errors. The hook closes with the task: a post after that gets 410
//     hook_closed;
//  7. when the task is cancelled instead (the hook closes, or the wait for
//     an answer sees it), stops the job;
//  8. once the job is over, either way, releases the task: an owner that
//     cancelled with a wait (POST .../cancel?wait=30s) is answered then.
//
// With -listen, the session it opens registers a notification endpoint on
// that address (agent.go): the agent hears the task's question and its end
// as signed webhooks instead of holding a long-poll open.
//
// With -publish, it starts no task: it publishes the devbox as a tool
// (tool.go) whose endpoint is the -listen address, and runs steps 2 to 8
// for every task a caller starts through the tool (over REST or MCP),
// heard as a signed task.created webhook; at start it takes the tasks
// started while it was away. It runs until interrupted:
//
//	TASKHOOK_ALLOW_PRIVATE_TARGETS=true make run
//	go run ./examples/devbox -token "$TOKEN" -publish devbox -listen 127.0.0.1:9000
//
// and call it (see the README's "MCP"):
//
//	curl -X POST localhost:8080/v1/tools/devbox/call -H "Authorization: Bearer $TOKEN" \
//	  -d '{"arguments":{"job":"migrate"}}'
//
// Run a server (`make run` prints a dev token), then:
//
//	go run ./examples/devbox -api http://localhost:8080 -token "$TOKEN"
//
// To have it sign in first, run the fake provider and give the server its
// connection (see the README's "Provider sign-in"):
//
//	go run ./connections/providertest/cmd -file /tmp/connections.json &
//	TASKHOOK_CONNECTIONS_FILE=/tmp/connections.json make run
//	go run ./examples/devbox -token "$TOKEN" -connection devbox -introspect http://127.0.0.1:9999/introspect
//
// and open the task's authorizationUrl (GET /v1/tasks/$TASK) in a browser.
//
// Without a connection, when it logs "waiting for the human" with the task and requestId,
// answer as the human would:
//
//	curl -X POST "localhost:8080/v1/tasks/$TASK/input" -H "Authorization: Bearer $TOKEN" \
//	  -d "{\"responses\":[{\"requestId\":\"$REQUEST\",\"optionId\":\"continue\"}]}"
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"
	"time"

	"github.com/taskhook/taskhook/client"
)

func main() {
	var cfg config
	flag.StringVar(&cfg.API, "api", "http://localhost:8080", "taskhook's base URL")
	flag.StringVar(&cfg.Token, "token", os.Getenv("TASKHOOK_TOKEN"), "bearer token of the executor (default $TASKHOOK_TOKEN)")
	flag.StringVar(&cfg.TaskID, "task", "", "work on this task instead of starting one")
	flag.StringVar(&cfg.Job, "job", jobMigrate, "the devbox job of a task it starts: one of "+strings.Join(jobs, ", "))
	flag.StringVar(&cfg.Listen, "listen", "", "for a task it starts, hear the task's events here as the agent would; with -publish, "+
		"hear the tool's calls here (a notification endpoint such as 127.0.0.1:9000; the server needs TASKHOOK_ALLOW_PRIVATE_TARGETS=true for loopback)")
	flag.StringVar(&cfg.Publish, "publish", "", "publish a tool of this name (such as devbox) with its endpoint at -listen, "+
		"and execute every task its callers start until interrupted")
	callers := flag.String("callers", client.ToolCallersAll, "with -publish: who may call the tool, principals separated by commas; * for everyone")
	flag.StringVar(&cfg.Connection, "connection", "", "get the requester's token for this taskhook connection (provider sign-in) "+
		"before calling the devbox; empty: call it without one")
	introspect := flag.String("introspect", "", "with -connection: the provider's token introspection URL the fake devbox checks tokens at "+
		"(for the fake provider of connections/providertest/cmd, http://127.0.0.1:9999/introspect)")
	flag.Parse()
	cfg.Callers = strings.Split(*callers, ",")
	cfg.Log = slog.New(slog.NewTextHandler(os.Stderr, nil))

	if *introspect != "" {
		cfg.Devbox = newDevbox(cfg.Log).requireTokens(*introspect)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, cfg); err != nil {
		cfg.Log.Error("devbox executor failed", "err", err)
		os.Exit(1)
	}
}

// config is what run needs.
type config struct {
	API    string       // taskhook's base URL
	Token  string       // the executor's bearer token
	TaskID string       // the task to work on; empty: open a session and start one
	Job    string       // the job of a task it starts (its input's "job")
	Devbox *devbox      // the outside service; nil: a new fake one
	Log    *slog.Logger // nil: no log
	// Listen, for a task it starts, is where the agent hears the task's
	// events (a notification endpoint of the session); Heard gets each one.
	Listen string
	Heard  func(client.Event)
	// Connection is the taskhook connection whose token the devbox API
	// takes; "" calls it without one.
	Connection string
	// Publish, when set, publishes the tool of that name, with its endpoint
	// at Listen, and executes every task started through it until ctx
	// ends (tool.go). Callers may call it (nil: everyone). Published is
	// told once the tool is published and the tasks started while the
	// executor was away are taken.
	Publish   string
	Callers   []string
	Published func(*client.Tool)
}

// run is the executor: of one task, from the task to its result, or with
// Publish of every task started through the tool, until ctx ends.
func run(ctx context.Context, cfg config) error {
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	dev := cfg.Devbox
	if dev == nil {
		dev = newDevbox(log)
	}
	// The fake devbox lives in this process, so its jobs stop with run; a
	// real service would go on by itself.
	defer dev.Wait()
	w := &worker{c: client.New(cfg.API, cfg.Token), log: log, dev: dev, connection: cfg.Connection}
	if cfg.Publish != "" {
		return serveTool(ctx, cfg, w)
	}

	var notify []client.EndpointRequest
	var ear *listener
	if cfg.Listen != "" && cfg.TaskID == "" {
		l, err := listen(cfg.Listen, log, cfg.Heard)
		if err != nil {
			return fmt.Errorf("listen for notifications: %w", err)
		}
		defer l.close()
		ear, notify = l, l.endpoint()
	}
	task, ses, err := taskToWorkOn(ctx, w.c, cfg.TaskID, cfg.Job, notify)
	if err != nil {
		return err
	}
	if ear != nil {
		ear.secret.Store(ses.Notify[0].Secret)
	}
	if err := w.work(ctx, task); err != nil {
		return err
	}
	if ear != nil {
		// The agent is done once it has heard the end (or gives up).
		wait, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		ear.heardEnd(wait)
	}
	return nil
}

// worker runs devbox jobs for tasks, one job a task.
type worker struct {
	c          *client.Client
	log        *slog.Logger
	dev        *devbox
	connection string // see config.Connection
}

// work runs the task's job, from the hook to the task's release.
func (w *worker) work(ctx context.Context, task *client.Task) error {
	w.log.Info("working on a task", "task", task.TaskID, "session", task.SessionID)

	// The hook first, then the outside work: nothing the job posts can be
	// missed. Bound to the task, the hook closes itself when the task ends.
	secret := newWebhookSecret()
	hook, err := w.c.CreateHook(ctx, client.CreateHookInput{
		TaskID: task.TaskID, Label: "devbox",
		Verify: &client.HookVerify{Scheme: client.VerifyStandardWebhooks, Secret: secret},
	})
	if err != nil {
		return fmt.Errorf("create the hook: %w", err)
	}
	w.log.Info("hook created", "hook", hook.HookID) // never log hook.URL: its token is the credential

	jobCtx, stopJob := context.WithCancel(ctx)
	defer stopJob()
	var input struct {
		Job string `json:"job"`
	}
	if len(task.Input) > 0 {
		if err := json.Unmarshal(task.Input, &input); err != nil {
			return fmt.Errorf("the task's input is not {\"job\": ...}: %w", err)
		}
	}
	jobID, err := startJob(ctx, w.c, w.connection, task.TaskID, func(token string) (string, error) {
		return w.dev.StartJob(jobCtx, token, input.Job, hook.URL, secret)
	})
	if err != nil {
		return err
	}

	x := &executor{c: w.c, log: w.log, task: task, hookID: hook.HookID, dev: w.dev, jobID: jobID}
	return x.finish(ctx, x.follow(ctx))
}

// startJob calls the devbox with the requester's token for connection (none
// when connection is ""): client.Token hands it over, or waits while the
// requester signs in (the task shows the sign-in's authorizationUrl). A
// token the devbox refuses goes to the loop guard: it is dropped and asked
// for again, unless it came from a sign-in moments ago, in which case the
// guard fails the task. A sign-in declined or failed fails the task too.
func startJob(ctx context.Context, c *client.Client, connection, taskID string, start func(token string) (string, error)) (string, error) {
	if connection == "" {
		return start("")
	}
	for {
		tok, err := c.Token(ctx, taskID, connection)
		var declined *client.SigninError
		if errors.As(err, &declined) {
			_, ferr := c.Fail(ctx, taskID, "no "+connection+" token: the sign-in was "+declined.Outcome, nil)
			return "", errors.Join(err, ferr)
		}
		if err != nil {
			return "", fmt.Errorf("the %s token: %w", connection, err)
		}
		jobID, err := start(tok.AccessToken)
		if !errors.Is(err, errUnauthorized) {
			return jobID, err
		}
		rej, rerr := c.Reject(ctx, taskID, connection)
		if rerr != nil {
			return "", errors.Join(err, rerr)
		}
		if rej.Action == "task_failed" {
			return "", fmt.Errorf("the devbox refused a token fresh from a sign-in: %w", err)
		}
	}
}

// taskToWorkOn reads the task id, or opens a session (with the notification
// endpoints given) and starts a task that runs job.
func taskToWorkOn(ctx context.Context, c *client.Client, id, job string, notify []client.EndpointRequest) (*client.Task, *client.Session, error) {
	if id != "" {
		t, err := c.GetTask(ctx, id)
		return t, nil, err
	}
	ses, err := c.CreateSession(ctx, client.CreateSessionInput{Notify: notify})
	if err != nil {
		return nil, nil, fmt.Errorf("open a session: %w", err)
	}
	t, err := c.CreateTask(ctx, client.CreateTaskInput{SessionID: ses.SessionID, Kind: "devbox", Label: "migrate users",
		Input: map[string]string{"job": job}})
	return t, ses, err
}

// executor follows one devbox job for one task.
type executor struct {
	c      *client.Client
	log    *slog.Logger
	task   *client.Task
	hookID string
	dev    *devbox
	jobID  string
}

// follow reads every post to the hook until the job ends. Returning from
// the loop body acks the post; leaving the loop (return, break) does not,
// and neither does a panic: such a post is read again later.
func (x *executor) follow(ctx context.Context) error {
	applied := 0 // the job's highest seq reported so far
	for ev, err := range x.c.Hook(x.hookID).Events(ctx, client.HookEventsOptions{Consumer: "executor"}) {
		if err != nil {
			return fmt.Errorf("read the hook: %w", err)
		}
		var st jobState
		if err := json.Unmarshal([]byte(ev.Body), &st); err != nil || st.Seq == 0 {
			x.log.Warn("skipping a post that is not a job state", "seq", ev.Seq)
			continue // reading it again would not make it better
		}
		if st.Seq <= applied {
			// Posts can arrive late or overtake each other; the job's own
			// seq says which state is the newest.
			x.log.Info("skipping a stale state", "state", st.State, "jobSeq", st.Seq, "applied", applied)
			continue
		}
		applied = st.Seq
		if err := x.report(ctx, ev, st); err != nil {
			return err
		}

		switch st.State {
		case stateAttentionRequired:
			decision, err := x.askHuman(ctx, ev, st.Question)
			if err != nil {
				return err
			}
			if err := x.dev.Continue(x.jobID, decision); err != nil {
				return err
			}
		case stateComplete:
			// This return leaves the loop without acking the post: it
			// needs no ack, as completing the task closed the hook.
			_, err := x.c.Complete(ctx, x.task.TaskID, map[string]string{"job": st.Job, "summary": st.Summary})
			return err
		case stateStopped:
			_, err := x.c.Fail(ctx, x.task.TaskID, "the job was stopped", map[string]string{"job": st.Job, "summary": st.Summary})
			return err
		case stateErrored:
			_, err := x.c.Fail(ctx, x.task.TaskID, "the job failed: "+st.Error, map[string]string{"job": st.Job})
			return err
		}
	}
	return ctx.Err() // the loop ends without an error only when ctx does
}

// finish ends the executor's part once follow has returned (err is why).
// When the task has ended (this executor ended it, or its owner cancelled
// it, which closed the hook or ended the wait for an answer), the job is
// stopped if it still runs and the task released: its outside work is over.
// A cancel is an ordinary end, not an error. A task that goes on keeps its
// job, and err is returned.
func (x *executor) finish(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var t *client.Task
	var gerr error
	if client.IsCode(err, client.CodeHookClosed) {
		// A session's cancel closes its hooks first, then cancels its
		// tasks: wait for the task's end (at once when it has ended).
		t, gerr = x.c.WaitTask(ctx, x.task.TaskID, 0, 30*time.Second, client.WithKinds(client.EventTaskTerminal))
	} else {
		t, gerr = x.c.GetTask(ctx, x.task.TaskID)
	}
	if gerr != nil {
		return errors.Join(err, gerr)
	}
	if !t.Terminal() {
		return err
	}
	if t.Status == client.StatusCancelled {
		x.log.Info("the task was cancelled: stopping the job", "reason", t.CancelReason)
		err = nil
	}
	if serr := x.dev.Stop(ctx, x.jobID); serr != nil {
		return errors.Join(err, fmt.Errorf("stop the job: %w", serr))
	}
	if _, rerr := x.c.Release(ctx, x.task.TaskID); rerr != nil {
		return errors.Join(err, fmt.Errorf("release the task: %w", rerr))
	}
	x.log.Info("task released", "status", t.Status)
	return err
}

// report makes the job's state the task's progress. A post can be read
// twice (at-least-once), so the report is keyed by the post's event id: a
// repeat is a replay, not a second report.
func (x *executor) report(ctx context.Context, ev client.HookEvent, st jobState) error {
	_, err := x.c.Progress(ctx, x.task.TaskID, client.ProgressInput{StatusMessage: &st.State, Progress: st},
		client.WithIdempotencyKey("devbox-progress:"+x.hookID+":"+ev.EventID))
	if err != nil {
		return fmt.Errorf("report %s: %w", st.State, err)
	}
	x.log.Info("job state", "state", st.State, "jobSeq", st.Seq)
	return nil
}

// ask puts the question to the task and returns the task with it and the
// question's request id. When the task still holds the same question open
// from an earlier run of its job (the executor stopped while it waited,
// and its restarted job asks again), that one is waited on instead: the
// person sees one question, and the answer they give it counts.
func (x *executor) ask(ctx context.Context, ev client.HookEvent, question string) (*client.Task, string, error) {
	for i, open := range x.task.InputRequests {
		if open.Kind == client.KindAsk && open.Prompt == question {
			x.task.InputRequests = slices.Delete(x.task.InputRequests, i, i+1) // it is taken: a later question is asked anew
			t, err := x.c.GetTask(ctx, x.task.TaskID)
			return t, open.RequestID, err
		}
	}
	t, err := x.c.RequireInput(ctx, x.task.TaskID, []client.InputRequest{{
		Kind: client.KindAsk, Prompt: question, Display: client.DisplaySelect,
		Options: []client.Choice{
			{ID: "continue", Label: "Go on", Style: "primary"},
			{ID: "stop", Label: "Stop the job", Style: "danger"},
		},
	}}, client.WithIdempotencyKey("devbox-ask:"+x.hookID+":"+ev.EventID))
	if err != nil {
		return nil, "", err
	}
	return t, t.InputRequests[len(t.InputRequests)-1].RequestID, nil
}

// askHuman asks the task's requester whether the job may go on, and waits
// for the answer: "continue" or "stop".
func (x *executor) askHuman(ctx context.Context, ev client.HookEvent, question string) (string, error) {
	t, request, err := x.ask(ctx, ev, question)
	if err != nil {
		return "", fmt.Errorf("ask the human: %w", err)
	}
	x.log.Info("waiting for the human", "task", t.TaskID, "requestId", request)
	// Woken by an answer or the task's end only: the progress this
	// executor or another reports does not end the wait.
	kinds := client.WithKinds(client.EventInputResolved, client.EventTaskTerminal)

	for {
		for _, r := range t.InputResponses {
			if r.RequestID == request {
				return r.OptionID, nil
			}
		}
		if t.Terminal() {
			return "", fmt.Errorf("task %s is %s: nobody will answer", t.TaskID, t.Status)
		}
		if t, err = x.c.WaitTask(ctx, x.task.TaskID, t.Revision, 30*time.Second, kinds); err != nil {
			return "", fmt.Errorf("wait for the answer: %w", err)
		}
	}
}
