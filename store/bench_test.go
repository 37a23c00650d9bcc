package store_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taskhook/taskhook/ids"
	"github.com/taskhook/taskhook/store"
	"github.com/taskhook/taskhook/store/storetest"
)

// BenchmarkApplyScript is the raw transition script (task_apply) against
// real Redis: one EVALSHA per change, each on its own task's next revision,
// from parallel goroutines.
func BenchmarkApplyScript(b *testing.B) {
	s, err := store.Open(context.Background(), storetest.Standalone(b), nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	const part = 1
	session := ids.New(ids.SessionPrefix, part)
	now := time.Now()
	ctx := context.Background()
	if _, err := s.CreateSession(ctx, store.SessionCreate{Partition: part, ID: session, Owner: "bench",
		JSON: []byte(`{}`), Event: []byte(`{}`), Now: now, ExpiresAt: now.Add(time.Hour), Retention: time.Hour}); err != nil {
		b.Fatal(err)
	}
	snapshot := []byte(fmt.Sprintf(`{"taskId":"x","status":"working","input":{"repo":"example"},"statusMessage":"%0200d"}`, 0))
	event := []byte(fmt.Sprintf(`{"type":"task.progress","data":{"task":%s}}`, snapshot))
	var workers atomic.Int64
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		workers.Add(1)
		id := ids.New(ids.TaskPrefix, part)
		if _, err := s.CreateTask(ctx, store.TaskCreate{Partition: part, ID: id, SessionID: session, Principal: "bench",
			JSON: snapshot, Event: event, Now: now, ExpiresAt: now.Add(time.Hour), Retention: time.Hour}); err != nil {
			b.Error(err)
			return
		}
		rev := int64(1)
		for pb.Next() {
			res, err := s.ApplyTask(ctx, store.TaskUpdate{Partition: part, ID: id, SessionID: session, ExpectRevision: rev,
				Status: "working", JSON: snapshot, Events: [][]byte{event}, Now: time.Now(), Retention: time.Hour})
			if err != nil || res.Outcome != store.OK {
				b.Errorf("apply: %v %+v", err, res.Outcome)
				return
			}
			rev++
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "applies/s")
}

// BenchmarkCreateScript is the raw receipt script (task_create) against real
// Redis: one EVALSHA per new task, all in one session, from parallel
// goroutines.
func BenchmarkCreateScript(b *testing.B) {
	s, err := store.Open(context.Background(), storetest.Standalone(b), nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	const part = 1
	session := ids.New(ids.SessionPrefix, part)
	now := time.Now()
	ctx := context.Background()
	if _, err := s.CreateSession(ctx, store.SessionCreate{Partition: part, ID: session, Owner: "bench",
		JSON: []byte(`{}`), Event: []byte(`{}`), Now: now, ExpiresAt: now.Add(24 * time.Hour), Retention: time.Hour}); err != nil {
		b.Fatal(err)
	}
	snapshot := []byte(fmt.Sprintf(`{"taskId":"x","status":"working","input":{"repo":"example"},"statusMessage":"%0200d"}`, 0))
	event := []byte(fmt.Sprintf(`{"type":"task.created","data":{"task":%s}}`, snapshot))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			now := time.Now()
			res, err := s.CreateTask(ctx, store.TaskCreate{Partition: part, ID: ids.New(ids.TaskPrefix, part), SessionID: session,
				Principal: "bench", JSON: snapshot, Event: event, Now: now, ExpiresAt: now.Add(time.Hour), Retention: time.Hour})
			if err != nil || res.Outcome != store.OK {
				b.Errorf("create: %v %+v", err, res.Outcome)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "creates/s")
}
