package tasks

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strings"
	"sync"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/events"
	"github.com/taskhook/taskhook/ids"
	"github.com/taskhook/taskhook/waits"
)

// MinAnswerKeyBytes is the shortest answer key the service takes.
const MinAnswerKeyBytes = 32

// AnswerLinks makes each ask request's answer token from a server key and
// puts the request's answerUrl into what readers get. Redis never holds a
// token: the stored task, its events and the wake-ups carry no answerUrl,
// and the token's mapping to its request is kept under the token's SHA-256
// only. Every replica of a deployment must hold the same key, or a link one
// replica shows is unknown to the others.
type AnswerLinks struct {
	key  []byte
	base string // PUBLIC_URL + "/v1/input/"
}

// NewAnswerLinks returns the links for a key (at least MinAnswerKeyBytes)
// and the public URL the links start with.
func NewAnswerLinks(key []byte, publicURL string) *AnswerLinks {
	return &AnswerLinks{key: append([]byte(nil), key...), base: publicURL + "/v1/input/"}
}

// Token is the answer token of a task's request: the prefix, the two
// characters naming the task's partition (so any replica finds the mapping's
// slot) and base64url of HMAC-SHA256(key, taskID NUL requestID). Request ids
// are unique over a task's life, so each request has a token of its own.
func (l *AnswerLinks) Token(taskID, requestID string) string {
	return l.token(AnswerTokenPrefix, nil, taskID, requestID)
}

// token is prefix, the task's partition and base64url of HMAC-SHA256(key,
// domain NUL taskID NUL requestID), without the domain and its NUL when
// domain is nil (answer tokens, which came first).
func (l *AnswerLinks) token(prefix string, domain []byte, taskID, requestID string) string {
	mac := hmac.New(sha256.New, l.key)
	if domain != nil {
		mac.Write(domain)
		mac.Write([]byte{0})
	}
	mac.Write([]byte(taskID))
	mac.Write([]byte{0})
	mac.Write([]byte(requestID))
	part := ""
	if n := len(ids.TaskPrefix); len(taskID) >= n+2 {
		part = taskID[n : n+2]
	}
	return prefix + part + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// SigninTokenPrefix starts every sign-in attempt token: the state of a
// sign-in's authorization URL (and, in the path form, the last part of its
// redirect URI).
const SigninTokenPrefix = "sgn_"

// SigninPlaceholder stands for the attempt token in the authorizationUrl of
// a sign-in request as it is stored (in the task and in its
// authorization.required event): the URL is shown with the token put in its
// place, so neither Redis nor a log of stored records holds the token. It
// survives URL escaping as it is, and no token holds it (a token's two
// characters after the prefix are a lowercase partition name).
const SigninPlaceholder = SigninTokenPrefix + "ATTEMPT"

var signinMarker = []byte(SigninPlaceholder)

// SigninToken is the attempt token of a task's sign-in request, made like an
// answer token but in a domain of its own: base64url of
// HMAC-SHA256(key, "signin" NUL taskID NUL requestID).
func (l *AnswerLinks) SigninToken(taskID, requestID string) string {
	return l.token(SigninTokenPrefix, []byte("signin"), taskID, requestID)
}

// SigninURL is a stored authorization URL as it is shown: the request's
// attempt token in place of SigninPlaceholder. A URL stored whole by an
// older version comes back as it is.
func (l *AnswerLinks) SigninURL(taskID, requestID, stored string) string {
	if !strings.Contains(stored, SigninPlaceholder) {
		return stored
	}
	return strings.ReplaceAll(stored, SigninPlaceholder, l.SigninToken(taskID, requestID))
}

// URL is the answerUrl of a task's request.
func (l *AnswerLinks) URL(taskID, requestID string) string {
	return l.base + l.Token(taskID, requestID)
}

// fill sets the answerUrl of every ask request of reqs; it reports whether it
// set any. A request that has one already keeps it: an older version stored
// its link in the task, and that link's token is the one mapped.
func (l *AnswerLinks) fill(taskID string, reqs []InputRequest) bool {
	changed := false
	for i := range reqs {
		if reqs[i].Kind == wire.KindAsk && reqs[i].AnswerURL == "" {
			reqs[i].AnswerURL = l.URL(taskID, reqs[i].RequestID)
			changed = true
		}
		if reqs[i].Kind == wire.KindAuthorization && strings.Contains(reqs[i].AuthorizationURL, SigninPlaceholder) {
			reqs[i].AuthorizationURL = l.SigninURL(taskID, reqs[i].RequestID, reqs[i].AuthorizationURL)
			changed = true
		}
	}
	return changed
}

// ShowTask fills the answer links of a task about to be shown.
func (l *AnswerLinks) ShowTask(t *Task) { l.fill(t.TaskID, t.InputRequests) }

// ShowRequests fills the answer links of a task's requests about to be
// shown, in place.
func (l *AnswerLinks) ShowRequests(taskID string, reqs []InputRequest) { l.fill(taskID, reqs) }

// askMarker is in the JSON of every ask request, and signinMarker in that
// of every sign-in request, so JSON without either needs no link: a task
// with no open question is shown as stored, at the cost of two byte
// searches. (User data may hold a marker too; that costs a decode.)
var askMarker = []byte(`"kind":"ask"`)

func needsLinks(raw []byte) bool {
	return bytes.Contains(raw, askMarker) || bytes.Contains(raw, signinMarker)
}

// Task returns a stored task's JSON as a reader sees it, with the answerUrl
// of each open ask request.
func (l *AnswerLinks) Task(raw []byte) []byte {
	out, _ := l.task(raw)
	return out
}

func (l *AnswerLinks) task(raw []byte) ([]byte, bool) {
	if !needsLinks(raw) {
		return raw, false
	}
	var t Task
	if json.Unmarshal(raw, &t) != nil || !l.fill(t.TaskID, t.InputRequests) {
		return raw, false
	}
	out, err := json.Marshal(t)
	if err != nil {
		return raw, false
	}
	return out, true
}

// Event returns a stored event's JSON as a reader sees it: the snapshot in
// data.task of a task.* event and the requests of input.requested get their
// answerUrl, and authorization.required its authorizationUrl.
func (l *AnswerLinks) Event(raw []byte) []byte {
	if !needsLinks(raw) {
		return raw
	}
	var e events.Event
	if json.Unmarshal(raw, &e) != nil {
		return raw
	}
	var data map[string]json.RawMessage
	if json.Unmarshal(e.Data, &data) != nil {
		return raw
	}
	changed := false
	if snap, ok := data["task"]; ok && isTaskEvent(e.Type) {
		if shown, ok := l.task(snap); ok {
			data["task"], changed = shown, true
		}
	}
	if list, ok := data["requests"]; ok && e.Type == wire.EventInputRequested {
		var reqs []InputRequest
		if json.Unmarshal(list, &reqs) == nil && l.fill(e.TaskID, reqs) {
			if shown, err := json.Marshal(reqs); err == nil {
				data["requests"], changed = shown, true
			}
		}
	}
	if stored, ok := data["authorizationUrl"]; ok && e.Type == wire.EventAuthorizationRequired {
		var u, id string
		if json.Unmarshal(stored, &u) == nil && json.Unmarshal(data["requestId"], &id) == nil && strings.Contains(u, SigninPlaceholder) {
			if shown, err := json.Marshal(l.SigninURL(e.TaskID, id, u)); err == nil {
				data["authorizationUrl"], changed = shown, true
			}
		}
	}
	if !changed {
		return raw
	}
	// The stored data is a marshalled map too (keys sorted), so only the
	// links differ.
	d, err := json.Marshal(data)
	if err != nil {
		return raw
	}
	e.Data = d
	out, err := json.Marshal(e)
	if err != nil {
		return raw
	}
	return out
}

// Events shows a page of a log, in place.
func (l *AnswerLinks) Events(entries []waits.LogEntry) []waits.LogEntry {
	for i := range entries {
		entries[i].JSON = l.Event(entries[i].JSON)
	}
	return entries
}

// processAnswerKey is the key of a service configured without one: random,
// made once per process, so links work on this process only.
var processAnswerKey = sync.OnceValue(func() []byte {
	k := make([]byte, MinAnswerKeyBytes)
	_, _ = rand.Read(k) // crypto/rand.Read never fails on supported platforms
	return k
})
