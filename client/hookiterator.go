package client

import (
	"context"
	"fmt"
	"iter"
	"net/http"
	"time"
)

// HookHandle reads one hook as an iterator. Make one with Client.Hook.
type HookHandle struct {
	c  *Client
	id string
}

// Hook returns a handle on the hook id; it makes no call.
func (c *Client) Hook(id string) *HookHandle { return &HookHandle{c: c, id: id} }

// HookEventsOptions configure Events. Zero values mean the defaults.
type HookEventsOptions struct {
	Group    string // the consumer group; default "default"
	Consumer string // this reader's name in the group; default "default". Give each worker its own.
	Count    int    // events per read, 1-100; default 10
	// Wait is how long one read waits for an event to arrive; default 30 s
	// (the server holds a read at most 60 s).
	Wait time.Duration
	// Visibility is how long a delivered event stays hidden from the group:
	// an event whose loop body has not returned within it may be delivered
	// again, to this or another reader. Default 30 s.
	Visibility time.Duration
	// MinBackoff and MaxBackoff bound the pauses after transient failures
	// (connection errors, 502, 503, 504, and 429 with Retry-After): the
	// pause before retry n is a random duration up to MinBackoff·2ⁿ, never
	// above MaxBackoff, and never shorter than the server's Retry-After.
	// Defaults 100 ms and 5 s.
	MinBackoff time.Duration
	MaxBackoff time.Duration
}

// Iterator defaults.
const (
	defaultHookWait       = 30 * time.Second
	defaultHookVisibility = 30 * time.Second
	// exitAckTimeout bounds the acks sent as the iterator ends, which may be
	// after ctx has ended.
	exitAckTimeout = 10 * time.Second
)

// Events reads the hook through a consumer group, in order, with
// at-least-once delivery:
//
//	for ev, err := range c.Hook(id).Events(ctx, client.HookEventsOptions{Consumer: "worker-1"}) {
//		if err != nil {
//			return err // the hook is gone (404), closed and drained (410), or the token is refused
//		}
//		handle(ev) // returning from the body acks ev
//	}
//
// An event is acknowledged when the loop body returns to the iterator (it
// reaches its end or continues), and never when the body breaks, returns
// from the enclosing function, or panics: such an event is delivered again
// after the visibility, with DeliveryCount one higher. Acks are batched: the
// events the body finished are acked before the next read, when a batch
// takes longer than half the visibility, and when the iterator ends.
//
// Reads and acks that fail with a connection error, a 502, 503 or 504, or a
// 429 with Retry-After are retried (exponential backoff with full jitter,
// honouring Retry-After) and never yielded; retrying an ack is safe, as
// acking an event twice is harmless. Any other
// error is yielded once, and ends the iteration; so does a hook that is
// closed and has nothing left for the group: an *Error with code
// hook_closed (status 410). The iteration ends without an error when ctx
// ends.
func (h *HookHandle) Events(ctx context.Context, opts HookEventsOptions) iter.Seq2[HookEvent, error] {
	return func(yield func(HookEvent, error) bool) {
		r := newHookReader(h, opts)
		// Runs on every way out, a panicking body's included: the events the
		// body returned from are acked; the one it left is not.
		defer r.ackOnExit(ctx)
		for ctx.Err() == nil {
			b, err := r.next(ctx)
			if err != nil {
				r.fail(ctx, yield, err)
				return
			}
			readAt := time.Now()
			for _, ev := range b.Events {
				if ctx.Err() != nil {
					return
				}
				if len(r.done) > 0 && time.Since(readAt) > r.visibility/2 {
					if err := r.ack(ctx); err != nil {
						r.fail(ctx, yield, err)
						return
					}
				}
				if !yield(ev, nil) {
					return // break: ev stays unacked
				}
				r.done = append(r.done, ev.EventID) // not reached when the body panics
			}
		}
	}
}

// hookReader is the state of one Events iteration.
type hookReader struct {
	c          *Client
	id         string
	read       HookReadParams
	visibility time.Duration
	retry      retryPolicy
	done       []string // events the body returned from, not acked yet
}

func newHookReader(h *HookHandle, o HookEventsOptions) *hookReader {
	r := &hookReader{
		c: h.c, id: h.id,
		read:       HookReadParams{Group: o.Group, Consumer: o.Consumer, Count: o.Count, Wait: o.Wait, Visibility: o.Visibility},
		visibility: o.Visibility, retry: newRetryPolicy(o.MinBackoff, o.MaxBackoff),
	}
	if r.read.Wait <= 0 {
		r.read.Wait = defaultHookWait
	}
	if r.visibility <= 0 {
		r.visibility = defaultHookVisibility
	}
	return r
}

// next acks the events the body finished, then reads the next batch,
// waiting for one. The read says whether the hook is closed, decided with
// the batch itself: a closed hook gets no more events, so a batch that says
// closed, brings nothing and leaves nothing pending in the group (nothing
// to ack, here or elsewhere) ends the iteration.
func (r *hookReader) next(ctx context.Context) (*HookBatch, error) {
	if err := r.ack(ctx); err != nil {
		return nil, err
	}
	b, err := r.readBatch(ctx, r.read)
	if err != nil || b.HookStatus != HookClosed || len(b.Events) > 0 || b.Pending > 0 || len(r.done) > 0 {
		return b, err
	}
	group := r.read.Group
	if group == "" {
		group = "default"
	}
	return nil, &Error{
		Status: http.StatusGone, Code: CodeHookClosed,
		Message: fmt.Sprintf("hook %s is closed (%s) and group %s has read every event", r.id, b.CloseReason, group),
	}
}

func (r *hookReader) readBatch(ctx context.Context, p HookReadParams) (*HookBatch, error) {
	var b *HookBatch
	err := r.retry.do(ctx, func(ctx context.Context) (err error) {
		b, err = r.c.ReadHook(ctx, r.id, p)
		return err
	})
	return b, err
}

// ack acknowledges the events the body finished.
func (r *hookReader) ack(ctx context.Context) error {
	if len(r.done) == 0 {
		return nil
	}
	err := r.retry.do(ctx, func(ctx context.Context) error {
		_, err := r.c.AckHook(ctx, r.id, r.read.Group, r.done)
		return err
	})
	if err == nil {
		r.done = r.done[:0]
	}
	return err
}

// ackOnExit acks what the body finished as the iteration ends, even when
// ctx has ended, within exitAckTimeout. An ack that fails here leaves the
// events to be delivered again: at least once still holds.
func (r *hookReader) ackOnExit(ctx context.Context) {
	if len(r.done) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), exitAckTimeout)
	defer cancel()
	_ = r.ack(ctx)
}

// fail yields a permanent error, unless ctx ended (then the iteration just
// ends).
func (r *hookReader) fail(ctx context.Context, yield func(HookEvent, error) bool, err error) {
	if ctx.Err() == nil {
		yield(HookEvent{}, err)
	}
}
