package main

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/taskhook/taskhook/client"
)

// With -publish, the executor offers the devbox as a tool: any caller it
// allows (over REST or MCP) starts a task through it, and taskhook
// tells the tool's endpoint of each new task with a signed task.created
// webhook. The executor runs each such task as it runs one it was given
// (worker.work): it is the task's executor, the caller its owner and, by
// default, the one who answers its questions.
//
// Webhooks are at least once and a task can be heard twice (a redelivery,
// or a webhook and the catch-up at start both naming it): a task is taken
// once per run. A task started while the executor was away is found at
// start by listing the tasks it executes that have not ended.

// toolInput is what the tool is published with: its endpoint and who may
// call it.
func toolInput(endpoint client.EndpointRequest, callers []string) client.PutToolInput {
	return client.PutToolInput{
		Title: "Devbox",
		Description: "Runs a database job in a sandbox and reports on it. " +
			"It asks a person before anything it cannot undo, such as dropping a table.",
		InputSchema: map[string]any{
			"type": "object", "required": []string{"job"}, "additionalProperties": false,
			"properties": map[string]any{
				"job": map[string]any{"type": "string", "enum": jobs, "description": "the job to run: " +
					jobMigrate + " asks once, " + jobMigrateAndReindex + " asks a follow-up, " +
					jobBrokenMigration + " fails, " + jobLongMigration + " runs until it is cancelled"},
			},
		},
		Callers:  callers,
		Endpoint: &endpoint,
	}
}

// serveTool publishes the tool cfg.Publish and executes the tasks started
// through it until ctx ends; then it stops hearing, waits for the work
// under way to stop, and returns nil.
func serveTool(ctx context.Context, cfg config, w *worker) error {
	if cfg.Listen == "" {
		return errors.New("-publish needs -listen: the address the tool's endpoint listens on")
	}
	x := &toolExecutor{w: w, kind: cfg.Publish, taken: map[string]bool{}}
	defer x.wait()
	l, err := listen(cfg.Listen, w.log, func(ev client.Event) {
		if ev.Type == client.EventTaskCreated {
			x.take(ctx, ev.TaskID)
		}
	})
	if err != nil {
		return fmt.Errorf("listen for the tool's calls: %w", err)
	}
	defer l.close()
	// A secret of its own, known before the first call can be heard. Tasks
	// started before this run keep the endpoint of their time, and with it
	// the secret of the run that published it: their webhooks are refused
	// here, and the catch-up below takes those tasks instead.
	secret := newWebhookSecret()
	l.secret.Store(secret)

	callers := cfg.Callers
	if callers == nil {
		callers = []string{client.ToolCallersAll}
	}
	tool, created, err := w.c.PutTool(ctx, cfg.Publish, toolInput(client.EndpointRequest{URL: l.url, Secret: secret}, callers))
	if err != nil {
		return fmt.Errorf("publish the tool %s: %w", cfg.Publish, err)
	}
	w.log.Info("tool published", "tool", tool.Name, "created", created, "callers", tool.Callers, "endpoint", l.url)
	if err := x.catchUp(ctx); err != nil {
		return err
	}
	if cfg.Published != nil {
		cfg.Published(tool)
	}
	<-ctx.Done()
	w.log.Info("stopping: the tool stays published; tasks started meanwhile wait for the next run", "tool", tool.Name)
	return nil
}

// toolExecutor runs the tasks of one tool, each once.
type toolExecutor struct {
	w    *worker
	kind string // the tool's name: the kind of its tasks

	mu     sync.Mutex
	taken  map[string]bool // every task taken in this run, ended or not
	closed bool            // wait has begun: nothing more is taken
	wg     sync.WaitGroup
}

// catchUp takes the tasks of the tool this executor executes that have not
// ended: those started while it was away, and any it was working on when
// it stopped (their jobs start over).
func (x *toolExecutor) catchUp(ctx context.Context) error {
	for _, status := range []string{client.StatusWorking, client.StatusInputRequired} {
		p := client.ListTasksParams{Role: client.RoleExecutor, Status: status, Kind: x.kind}
		for {
			page, err := x.w.c.ListTasks(ctx, p)
			if err != nil {
				return fmt.Errorf("list the tasks to catch up on: %w", err)
			}
			for _, t := range page.Items {
				x.take(ctx, t.TaskID)
			}
			if page.NextCursor == "" {
				break
			}
			p.Cursor = page.NextCursor
		}
	}
	return nil
}

// take runs the task's work in a goroutine of its own, unless this run has
// taken it already.
func (x *toolExecutor) take(ctx context.Context, taskID string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed || x.taken[taskID] {
		return
	}
	x.taken[taskID] = true
	x.wg.Add(1)
	go func() {
		defer x.wg.Done()
		// Read it now: a task heard late (a redelivery) may have ended.
		task, err := x.w.c.GetTask(ctx, taskID)
		if err == nil && !task.Terminal() {
			err = x.w.work(ctx, task)
		}
		if err != nil && ctx.Err() == nil {
			x.w.log.Warn("a task's work stopped before its end", "task", taskID, "err", err)
		}
	}()
}

// wait takes nothing more and waits for the work under way to return.
func (x *toolExecutor) wait() {
	x.mu.Lock()
	x.closed = true
	x.mu.Unlock()
	x.wg.Wait()
}
