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
	s, session, now := benchSession(b, time.Hour)
	ctx := context.Background()
	snapshot := []byte(fmt.Sprintf(`{"taskId":"x","status":"working","input":{"repo":"example"},"statusMessage":"%0200d"}`, 0))
	event := []byte(fmt.Sprintf(`{"type":"task.progress","data":{"task":%s}}`, snapshot))
	var workers atomic.Int64
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		workers.Add(1)
		id := ids.New(ids.TaskPrefix, benchPart)
		if _, err := s.CreateTask(ctx, store.TaskCreate{LogWrite: store.LogWrite{Partition: benchPart, Now: now, Retention: time.Hour},
			NewRecord: store.NewRecord{ID: id, JSON: snapshot, Event: event, ExpiresAt: now.Add(time.Hour)},
			SessionID: session, Principal: "bench"}); err != nil {
			b.Error(err)
			return
		}
		rev := int64(1)
		for pb.Next() {
			res, err := s.ApplyTask(ctx, store.TaskUpdate{LogWrite: store.LogWrite{Partition: benchPart, Now: time.Now(), Retention: time.Hour},
				ID: id, SessionID: session, ExpectRevision: rev, OldStatus: "working", Status: "working", JSON: snapshot, Events: []store.TaskEvent{{JSON: event}}})
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
	s, session, _ := benchSession(b, 24*time.Hour)
	ctx := context.Background()
	snapshot := []byte(fmt.Sprintf(`{"taskId":"x","status":"working","input":{"repo":"example"},"statusMessage":"%0200d"}`, 0))
	event := []byte(fmt.Sprintf(`{"type":"task.created","data":{"task":%s}}`, snapshot))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			now := time.Now()
			res, err := s.CreateTask(ctx, store.TaskCreate{LogWrite: store.LogWrite{Partition: benchPart, Now: now, Retention: time.Hour},
				NewRecord: store.NewRecord{ID: ids.New(ids.TaskPrefix, benchPart), JSON: snapshot, Event: event, ExpiresAt: now.Add(time.Hour)},
				SessionID: session, Principal: "bench"})
			if err != nil || res.Outcome != store.OK {
				b.Errorf("create: %v %+v", err, res.Outcome)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "creates/s")
}

// benchPart is the partition the script benchmarks write to.
const benchPart = 1

// benchSession opens a store on the standalone Redis and a session in
// benchPart that lives for life.
func benchSession(b *testing.B, life time.Duration) (*store.Store, string, time.Time) {
	s := storetest.Open(b, storetest.Standalone(b), nil)
	session := ids.New(ids.SessionPrefix, benchPart)
	now := time.Now()
	if _, err := s.CreateSession(context.Background(), store.SessionCreate{LogWrite: store.LogWrite{Partition: benchPart, Now: now, Retention: time.Hour},
		NewRecord: store.NewRecord{ID: session, JSON: []byte(`{}`), Event: []byte(`{}`), ExpiresAt: now.Add(life)},
		Owner:     "bench"}); err != nil {
		b.Fatal(err)
	}
	return s, session, now
}

// BenchmarkEmbeddedReadAmongKeys is one small read on the embedded store
// holding some thousands of keys with a TTL (as tasks have): its cost should
// not grow with the keys held.
func BenchmarkEmbeddedReadAmongKeys(b *testing.B) {
	for _, keys := range []int{1000, 10000, 30000} {
		b.Run(fmt.Sprint(keys, " keys"), func(b *testing.B) {
			s := storetest.Open(b, storetest.Embedded(b), nil)
			ctx := context.Background()
			for start := 0; start < keys; start += 1000 {
				pipe := s.RDB.Pipeline()
				for i := start; i < start+1000; i++ {
					pipe.Set(ctx, fmt.Sprint("k", i), "v", time.Hour)
				}
				if _, err := pipe.Exec(ctx); err != nil {
					b.Fatal(err)
				}
			}
			for i := 0; b.Loop(); i++ {
				if err := s.RDB.Get(ctx, fmt.Sprint("k", i%keys)).Err(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
