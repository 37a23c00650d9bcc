package store

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"

	"github.com/taskhook/taskhook/api/wire"
)

// Keys builds every Redis key name. Each key starts with the deployment's
// prefix and a partition hash tag, so everything of one session (its tasks,
// hooks and logs) lives in one Redis Cluster slot and each script touches
// one slot only.
type Keys struct {
	prefix string
}

// NewKeys returns the key builder for a prefix such as "th:".
func NewKeys(prefix string) Keys { return Keys{prefix: prefix} }

// Tag is the partition's key prefix, hash tag included.
func (k Keys) Tag(p int) string { return k.prefix + "{" + strconv.Itoa(p) + "}:" }

// Session is the session record (a hash: json, status, owner).
func (k Keys) Session(p int, id string) string { return k.Tag(p) + "ses:" + id }

// SessionLog is the session's event stream.
func (k Keys) SessionLog(p int, id string) string { return k.Tag(p) + "ses:" + id + ":log" }

// SessionTasks indexed a session's tasks by creation time. Tasks are no
// longer added to it (SessionTaskIndexes): it is read until it expires.
func (k Keys) SessionTasks(p int, id string) string { return k.Tag(p) + "ses:" + id + ":tasks" }

// SessionTaskIndexes are the indexes whose union is a session's tasks: its
// index of each status, and its index of all tasks, which those created
// before went into. A task is in one status index at a time; one in two of
// them is listed once (a list merges its indexes).
func (k Keys) SessionTaskIndexes(p int, id string) []string {
	ixs := make([]string, 0, 1+len(wire.TaskStatuses))
	ixs = append(ixs, k.SessionTasks(p, id))
	for _, st := range wire.TaskStatuses {
		ixs = append(ixs, k.SessionTasksByStatus(p, id, st))
	}
	return ixs
}

// indexMemberKept is the member by which an index of tasks that scripts
// take tasks out of keeps the time it lives until, as minus its score (see
// index_add in the scripts' prelude). A read of tasks reads scores from 0 up
// (indexFloor), which leaves it out.
const (
	indexMemberKept = "kept"
	indexFloor      = "0"
)

// SessionLive holds a session's live (not yet terminal) tasks, scored by
// when each expires: a count from now on is of the ones still live.
func (k Keys) SessionLive(p int, id string) string { return k.Tag(p) + "ses:" + id + ":live" }

// SessionTasksByStatus indexes a session's tasks in one status by creation time.
func (k Keys) SessionTasksByStatus(p int, id, status string) string {
	return k.Tag(p) + "ses:" + id + ":tasks:" + status
}

// SessionCancelled lists the tasks a session cancel has cancelled so far,
// for the session.cancelled event it ends with.
func (k Keys) SessionCancelled(p int, id string) string { return k.Tag(p) + "ses:" + id + ":cancelled" }

// Cancels holds the partition's session cancels in progress, scored by when
// the replica working on each loses its lease, so another one finishes a
// cancel whose replica died.
func (k Keys) Cancels(p int) string { return k.Tag(p) + "cancels" }

// OwnerSessions indexes an owner's sessions in one partition by creation time.
func (k Keys) OwnerSessions(p int, owner string) string {
	return k.Tag(p) + "own:" + digest(owner) + ":ses"
}

// OwnerTasks indexes an owner's tasks in one partition by creation time.
func (k Keys) OwnerTasks(p int, owner string) string {
	return k.Tag(p) + "own:" + digest(owner) + ":tasks"
}

// OwnerTasksByStatus indexes an owner's tasks in one status, in one
// partition, by creation time.
func (k Keys) OwnerTasksByStatus(p int, owner, status string) string {
	return k.Tag(p) + "own:" + digest(owner) + ":tasks:" + status
}

// OwnerTasksByKind indexes an owner's tasks of one kind, in one partition,
// by creation time.
func (k Keys) OwnerTasksByKind(p int, owner, kind string) string {
	return k.Tag(p) + "own:" + digest(owner) + ":kind:" + digest(kind)
}

// ExecutorTasks indexes, in one partition by creation time, the tasks an
// executor runs for another owner. A task its owner executes is in the
// owner's indexes only: most tasks are, and each index entry costs memory.
func (k Keys) ExecutorTasks(p int, executor string) string {
	return k.Tag(p) + "exe:" + digest(executor) + ":tasks"
}

// ExecutorTasksByStatus is ExecutorTasks for the tasks in one status.
func (k Keys) ExecutorTasksByStatus(p int, executor, status string) string {
	return k.Tag(p) + "exe:" + digest(executor) + ":tasks:" + status
}

// DefaultSession holds the id of an owner's default session (a string), the
// one a task started without a session goes to; it is in the partition
// ids.PartitionFor(owner) chooses, as the session is.
func (k Keys) DefaultSession(p int, owner string) string {
	return k.Tag(p) + "own:" + digest(owner) + ":defses"
}

// Task is the task record (a hash: rev, status, json, owner, created, and
// requester, executor and kind, each only when it is not the owner or
// none).
func (k Keys) Task(p int, id string) string { return k.Tag(p) + "task:" + id }

// TaskLog is where a task's log (the ids of its events, an index into its
// session's log, which holds the events) moves when it outgrows its place
// in the task record (taskFieldLog), and where tasks created before kept it:
// see the prelude of store/lua.
func (k Keys) TaskLog(p int, id string) string { return k.Tag(p) + "task:" + id + ":log" }

// Log names an event log to read: a session's (a stream), or a task's (its
// index, joined with its session's log at read).
type Log struct {
	Key     string
	Session string // a task's log: its session's log; "" for a session's
	Record  string // a task's log: the task record, which may keep the log
	Tasks   string // the key of a task record of the log's partition but the id, to join task events with
}

// TaskEvents is the task's log, to read.
func (k Keys) TaskEvents(p int, id, sessionID string) Log {
	return Log{Key: k.TaskLog(p, id), Session: k.SessionLog(p, sessionID), Record: k.Task(p, id), Tasks: k.Task(p, "")}
}

// SessionEvents is the session's log, to read.
func (k Keys) SessionEvents(p int, id string) Log {
	return Log{Key: k.SessionLog(p, id), Tasks: k.Task(p, "")}
}

// Idempotency is the stored response of an idempotent request (a hash: h, b).
func (k Keys) Idempotency(p int, scope string) string { return k.Tag(p) + "idem:" + digest(scope) }

// Command is the record of a command id the server made for one write (a
// string: the script's reply as JSON), kept CommandTTL.
func (k Keys) Command(p int, id string) string { return k.Tag(p) + "cmd:" + id }

// IdempotencyClaim binds an idempotency key to its body hash in the scope's
// own partition (a string), for a create whose record lives in a partition
// the body chooses.
func (k Keys) IdempotencyClaim(p int, scope string) string {
	return k.Tag(p) + "idemclaim:" + digest(scope)
}

// Wake is the partition's wake-up stream, read by every replica's fan-in reader.
func (k Keys) Wake(p int) string { return k.Tag(p) + "wake" }

// Hook is the hook record (a hash).
func (k Keys) Hook(p int, id string) string { return k.Tag(p) + "hook:" + id }

// HookToken maps the SHA-256 of a callback token to its hook id.
func (k Keys) HookToken(p int, tokenHash string) string { return k.Tag(p) + "hooktok:" + tokenHash }

// AnswerToken maps the SHA-256 of an input request's answer token to its
// task and request (a string), in the task's slot; it expires with the task.
func (k Keys) AnswerToken(p int, tokenHash string) string { return k.Tag(p) + "anstok:" + tokenHash }

// HookQueue is the hook's event stream, read through consumer groups.
func (k Keys) HookQueue(p int, id string) string { return k.Tag(p) + "hook:" + id + ":q" }

// HookDedupe maps provider event ids to the first stored event id (a hash).
func (k Keys) HookDedupe(p int, id string) string { return k.Tag(p) + "hook:" + id + ":dedupe" }

// HookDead is the hook's dead-letter stream.
func (k Keys) HookDead(p int, id string) string { return k.Tag(p) + "hook:" + id + ":dead" }

// SessionHooks indexes a session's hooks.
func (k Keys) SessionHooks(p int, id string) string { return k.Tag(p) + "ses:" + id + ":hooks" }

// TaskHooks indexes a task's hooks.
func (k Keys) TaskHooks(p int, id string) string { return k.Tag(p) + "task:" + id + ":hooks" }

// OwnerHooks indexes an owner's hooks in one partition by creation time.
func (k Keys) OwnerHooks(p int, owner string) string {
	return k.Tag(p) + "own:" + digest(owner) + ":hooks"
}

// digest keeps caller-chosen strings (owners, idempotency scopes) out of key
// names: fixed length, no braces, nothing to read back.
func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:16])
}

// Outbox is the partition's stream of notifications to deliver, read by every
// replica through one consumer group.
func (k Keys) Outbox(p int) string { return k.Tag(p) + "outbox" }

// OutboxRetries holds the partition's notifications waiting for their next
// attempt, scored by when it is due.
func (k Keys) OutboxRetries(p int) string { return k.Tag(p) + "outbox:retry" }

// NotifyDeadLetters is a session's stream of notifications given up on (its
// own and its tasks').
func (k Keys) NotifyDeadLetters(p int, sessionID string) string {
	return k.Tag(p) + "ses:" + sessionID + ":notify:dead"
}

// ConnectionToken is a requester's sealed provider token for one connection
// (a string), in the partition of the requester: it serves every task the
// requester's tasks, whatever their session.
func (k Keys) ConnectionToken(p int, requester, connection string) string {
	return k.Tag(p) + "conntok:" + digest(requester) + ":" + digest(connection)
}

// SigninAttempt maps the SHA-256 of a sign-in attempt token to its task,
// request and sealed PKCE verifier (a string), in the task's slot; it
// expires with the task, and says itself when the attempt ran out.
func (k Keys) SigninAttempt(p int, tokenHash string) string { return k.Tag(p) + "signin:" + tokenHash }

// Tool is a published tool's record (a hash: the fields of store/tools.go,
// and its endpoint as a record's endpoints are kept), in the partition its
// name falls in (ids.PartitionFor). Tool names hold no braces or colons.
func (k Keys) Tool(p int, name string) string { return k.Tag(p) + "tool:" + name }

// ToolsOpen indexes the tools of partition p that anyone may call, by
// creation time.
func (k Keys) ToolsOpen(p int) string { return k.Tag(p) + "tools:open" }

// ToolsOf indexes the tools of partition p open to a principal that
// not everyone may call: those naming it among their callers, and those it
// publishes. Each tool is in ToolsOpen or in these, never both, so a list
// of the two holds each tool once.
func (k Keys) ToolsOf(p int, principal string) string {
	return k.Tag(p) + "own:" + digest(principal) + ":tools"
}
