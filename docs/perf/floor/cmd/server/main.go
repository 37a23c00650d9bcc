// Command server is the floor of the side-by-side comparison: the least HTTP
// service that does what the load tool asks of taskhook, to learn how far
// the kit's goals are reachable at all with Go's net/http and go-redis on
// one machine. It keeps none of taskhook's rules: no idempotency, no event
// logs to read back, no ownership, no limits. Each task command is one JWT
// check, one JSON decode and one EVALSHA of the kit's six-write
// transition-shaped script; each hook post is one XADD; a long-poll of a task
// waits in its handler on a channel that the task's complete closes on the
// same process (no Redis traffic, no parking).
//
// Run the unchanged kit against it from this folder:
//
//	cd docs/perf/floor && ../../../../shared/perf/side-by-side.sh lifecycle   # ingest, waiters
//
// (the kit builds ./cmd/server from the folder it is run in). It reads the
// kit's settings: TASKHOOK_ADDR, TASKHOOK_REDIS_URL, TASKHOOK_JWT_SECRET and
// TASKHOOK_PUBLIC_URL.
package main

import (
	"encoding/json"
	"errors"
	"io"
	"log"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/redis/go-redis/v9"
)

// transition has the shape of the kit's transition-like.lua: read a
// revision, append to two logs and a wake stream, write the record and a
// command record.
var transition = redis.NewScript(`
local v = tonumber(redis.call('HGET', KEYS[1], 'v') or '0')
local nv = v + 1
redis.call('XADD', KEYS[2], 'MAXLEN', '~', '1000', '*', 'rev', nv, 'snap', ARGV[1])
redis.call('XADD', KEYS[3], 'MAXLEN', '~', '1000', '*', 'rev', nv, 'snap', ARGV[1])
redis.call('HSET', KEYS[1], 'v', nv, 'snap', ARGV[1])
redis.call('SET', KEYS[4], nv, 'EX', 86400)
redis.call('XADD', KEYS[5], 'MAXLEN', '~', '1000', '*', 'w', nv)
return nv`)

type floor struct {
	rdb    *redis.Client
	secret []byte
	public string
	ids    atomic.Int64
	ended  sync.Map // task id → chan struct{}, closed when the task completes
}

func main() {
	opts, err := redis.ParseURL(os.Getenv("TASKHOOK_REDIS_URL"))
	if err != nil {
		log.Fatal(err)
	}
	opts.PoolSize = 128
	f := &floor{rdb: redis.NewClient(opts), secret: []byte(os.Getenv("TASKHOOK_JWT_SECRET")), public: os.Getenv("TASKHOOK_PUBLIC_URL")}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.HandleFunc("POST /v1/sessions", f.authed(func(w http.ResponseWriter, r *http.Request) {
		reply(w, http.StatusCreated, map[string]string{"sessionId": "ses_" + f.next()})
	}))
	mux.HandleFunc("POST /v1/tasks", f.authed(func(w http.ResponseWriter, r *http.Request) {
		id := "task_" + f.next()
		f.ended.Store(id, make(chan struct{}))
		f.apply(w, r, id, http.StatusCreated)
	}))
	mux.HandleFunc("POST /v1/tasks/{id}/{command}", f.authed(func(w http.ResponseWriter, r *http.Request) {
		if f.apply(w, r, r.PathValue("id"), http.StatusOK) && r.PathValue("command") == "complete" {
			if ch, ok := f.ended.LoadAndDelete(r.PathValue("id")); ok {
				close(ch.(chan struct{}))
			}
		}
	}))
	mux.HandleFunc("GET /v1/tasks/{id}", f.authed(f.wait))
	mux.HandleFunc("POST /v1/hooks", f.authed(func(w http.ResponseWriter, r *http.Request) {
		reply(w, http.StatusCreated, map[string]string{"url": f.public + "/v1/callback/" + f.next()})
	}))
	mux.HandleFunc("POST /v1/callback/{token}", f.ingest)
	srv := &http.Server{Addr: os.Getenv("TASKHOOK_ADDR"), Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(srv.ListenAndServe())
}

func (f *floor) next() string { return strconv.FormatInt(f.ids.Add(1), 10) }

// authed checks an HS256 bearer token as taskhook does.
func (f *floor) authed(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		raw, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		_, err := jwt.Parse(raw, func(*jwt.Token) (any, error) { return f.secret, nil }, jwt.WithValidMethods([]string{"HS256"}))
		if err != nil {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		next(w, r)
	}
}

// apply runs one task command: decode, one script, answer the snapshot. It
// reports whether the command was applied.
func (f *floor) apply(w http.ResponseWriter, r *http.Request, id string, code int) bool {
	var in map[string]any
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil && !errors.Is(err, io.EOF) {
		http.Error(w, "bad body", http.StatusBadRequest)
		return false
	}
	snap, _ := json.Marshal(map[string]any{"taskId": id, "status": "working", "input": in})
	keys := []string{"fl:t:" + id, "fl:t:" + id + ":log", "fl:s:log", "fl:cmd:" + f.next(), "fl:wake"}
	rev, err := transition.Run(r.Context(), f.rdb, keys, snap).Int64()
	if err != nil {
		http.Error(w, "unavailable", http.StatusServiceUnavailable)
		return false
	}
	reply(w, code, map[string]any{"taskId": id, "status": "working", "revision": rev})
	return true
}

// wait answers a long-poll of a task once the task completes, or when
// ?wait runs out.
func (f *floor) wait(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	wait, err := time.ParseDuration(r.URL.Query().Get("wait"))
	if err != nil {
		wait = 0
	}
	if ch, ok := f.ended.Load(id); ok {
		t := time.NewTimer(min(wait, time.Minute))
		defer t.Stop()
		select {
		case <-ch.(chan struct{}):
		case <-t.C:
		case <-r.Context().Done():
			return
		}
	}
	reply(w, http.StatusOK, map[string]any{"taskId": id})
}

// ingest stores one hook post in its queue.
func (f *floor) ingest(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	id, err := f.rdb.XAdd(r.Context(), &redis.XAddArgs{Stream: "fl:h:" + r.PathValue("token"), Values: []any{"b", body}}).Result()
	if err != nil {
		http.Error(w, "unavailable", http.StatusServiceUnavailable)
		return
	}
	reply(w, http.StatusAccepted, map[string]any{"ok": true, "eventId": id})
}

func reply(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
