package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/idem"
	"github.com/taskhook/taskhook/problem"

	"github.com/taskhook/taskhook/authz"
	"github.com/taskhook/taskhook/ids"
	"github.com/taskhook/taskhook/store"
	"github.com/taskhook/taskhook/tokens"
)

// AnswerTokenPrefix starts every answer token: the capability in an ask
// request's answerUrl.
const AnswerTokenPrefix = "ans_"

// answerRef is what the store keeps under an answer token's hash: the one
// request the token answers. It never changes, so replicas cache it.
type answerRef struct {
	Hash      string `json:"h"`
	TaskID    string `json:"t"`
	RequestID string `json:"r"`
}

// answerTokens makes the mapping of each ask request of a new batch: its
// answer token's hash to the request. It returns the requests as Apply should
// see them (with no answerUrl: links are derived when a task is shown, never
// stored) and the mappings the write stores.
func (s *Service) answerTokens(taskID string, reqs []InputRequest) ([]InputRequest, []store.AnswerToken) {
	var mapped []store.AnswerToken
	for i := range reqs {
		reqs[i].AnswerURL = ""
		if reqs[i].Kind != wire.KindAsk {
			continue
		}
		token := s.links.Token(taskID, reqs[i].RequestID)
		ref := answerRef{Hash: tokens.Hash(token), TaskID: taskID, RequestID: reqs[i].RequestID}
		val, _ := json.Marshal(ref) // three strings: cannot fail
		mapped = append(mapped, store.AnswerToken{Hash: ref.Hash, Value: val})
	}
	return reqs, mapped
}

// expiresAt is when a task's answer tokens end: with the task.
func expiresAt(t Task, now time.Time, max time.Duration) time.Time {
	if t.ExpiresAt != nil {
		return t.ExpiresAt.Time
	}
	return now.Add(max)
}

// AnswerInput is the body of POST /v1/input/{token}.
type AnswerInput struct {
	OptionID string `json:"optionId,omitempty"`
	Text     string `json:"text,omitempty"`
	Action   string `json:"action,omitempty"`
}

// Answered is what an answer URL answers with: not the task, which the
// holder of the capability may not read.
type Answered struct {
	OK        bool   `json:"ok"`
	TaskID    string `json:"taskId"`
	RequestID string `json:"requestId"`
	Status    Status `json:"status"`
}

// AnswerTarget is the input request an answer token names, as
// ResolveAnswer found it from the token alone, before the answer is read.
type AnswerTarget struct {
	ref       answerRef
	requester string
}

// ResolveAnswer finds the request an answer token names from the token
// alone, so a request to an unknown or dead token is answered before its
// body is read. problem.ErrNotFound: no such token; ErrInputClosed: the request was
// answered or its task ended, unless idem names an answer stored under its
// key (only idem.Scope is read: the body is not known yet), which the
// answer will replay. It reads the store only for what this replica has not
// cached, so a warm answer still costs one round trip in all.
func (s *Service) ResolveAnswer(ctx context.Context, token string, idem idem.Key) (AnswerTarget, error) {
	part, ok := tokens.Parse(token, AnswerTokenPrefix, s.store.Partitions)
	if !ok {
		return AnswerTarget{}, problem.ErrNotFound
	}
	hash := tokens.Hash(token)
	ref, cached, err := s.resolveAnswer(ctx, part, hash, true)
	if err != nil {
		return AnswerTarget{}, err
	}
	t, _, fromCache := s.cache.get(ref.TaskID)
	if !fromCache {
		t, _, err = s.load(ctx, part, ref.TaskID)
	}
	if errors.Is(err, problem.ErrNotFound) && cached {
		// The task is gone: so may the token be (404), or it outlives it (410).
		s.answers.Drop(hash, nil)
		if _, _, err = s.resolveAnswer(ctx, part, hash, false); err == nil {
			err = ErrInputClosed
		}
	}
	if err != nil {
		if errors.Is(err, problem.ErrNotFound) && !cached {
			err = ErrInputClosed
		}
		return AnswerTarget{}, err
	}
	if !t.awaits(ref.RequestID) && fromCache {
		// A cached snapshot may be stale: judge again on the stored task.
		if t, _, err = s.load(ctx, part, ref.TaskID); errors.Is(err, problem.ErrNotFound) {
			err = ErrInputClosed
		}
		if err != nil {
			return AnswerTarget{}, err
		}
	}
	if !t.awaits(ref.RequestID) {
		_, stored, err := s.store.Replay(ctx, part, idem) // ok for any answer stored under the key
		if err != nil {
			return AnswerTarget{}, err
		}
		if !stored {
			return AnswerTarget{}, ErrInputClosed
		}
	}
	return AnswerTarget{ref: ref, requester: t.Requester}, nil
}

// answerLink is who answers through an answer URL: its holder, whoever
// that is.
var answerLink = Answerer{By: wire.AnsweredByAnswerLink, Via: wire.ViaAnswerLink}

// Answer answers the request ResolveAnswer found, with the task requester's
// rights and under the rules of respond; the task records it as given
// through an answer link. ErrInputClosed: the request was answered or the
// task ended meanwhile.
func (s *Service) Answer(ctx context.Context, at AnswerTarget, in AnswerInput, idem idem.Key) (Answered, bool, error) {
	ref := at.ref
	if ref.TaskID == "" {
		return Answered{}, false, errors.New("answer: the target was not resolved")
	}
	done, replayed, err := s.answerOne(ctx, at.requester, ref.TaskID,
		Answer{RequestID: ref.RequestID, OptionID: in.OptionID, Text: in.Text, Action: in.Action}, answerLink, idem)
	if err != nil {
		return Answered{}, false, err
	}
	return Answered{OK: true, TaskID: done.TaskID, RequestID: ref.RequestID, Status: done.Status}, replayed, nil
}

// ErrNotRequester refuses an answer a channel vouches for (a Slack user
// mapped to a principal) from a principal who is not the task's requester.
var ErrNotRequester = errors.New("only the task's requester may answer")

// AnswerAs answers one request of a task for a channel that knows who
// answers (Slack): by.By must be the task's requester (ErrNotRequester;
// being its owner or an admin is not enough), and the answer is judged as an
// answer URL's is, so the request must still be open (ErrInputClosed). The
// task records by with the answer. It returns the task after the answer, as
// its reader sees it (a sign-in still open links to its attempt), and the
// requests that were open before it, as stored, whose option labels say what
// the answer chose.
func (s *Service) AnswerAs(ctx context.Context, by Answerer, taskID string, answer Answer) (Task, []InputRequest, error) {
	part, err := ids.PartitionOf(taskID, ids.TaskPrefix, s.store.Partitions)
	if err != nil {
		return Task{}, nil, ErrInputClosed
	}
	// The requester is set at creation and never changes: a cached snapshot
	// tells it as well as the store.
	t, _, ok := s.cache.get(taskID)
	if !ok {
		if t, _, err = s.load(ctx, part, taskID); err != nil {
			return Task{}, nil, answerError(err)
		}
	}
	if by.By == "" || by.By != t.Requester {
		return Task{}, nil, ErrNotRequester
	}
	done, _, err := s.answerOne(ctx, t.Requester, taskID, answer, by, idem.Key{})
	if err != nil {
		return Task{}, nil, err
	}
	s.links.ShowTask(&done)
	return done, t.InputRequests, nil
}

// TaskAnswer is one answer of those a channel gives together (the actions
// of one Slack interaction): the task, and the answer to one of its
// requests.
type TaskAnswer struct {
	TaskID string
	Answer Answer
}

// AnswersTaken is what AnswerEach did: how many answers it took, the task
// as the last one taken left it with the requests open before that answer
// (as AnswerAs returns them), and the error that refused the next one (nil
// when none was refused).
type AnswersTaken struct {
	Taken   int
	Task    Task
	Asked   []InputRequest
	Refused error
}

// AnswerEach gives answers in order as by, each as AnswerAs gives one, and
// stops at the first one refused: the answers taken before it stand.
func (s *Service) AnswerEach(ctx context.Context, by Answerer, answers []TaskAnswer) AnswersTaken {
	var took AnswersTaken
	for _, a := range answers {
		t, asked, err := s.AnswerAs(ctx, by, a.TaskID, a.Answer)
		if err != nil {
			took.Refused = err
			break
		}
		took.Taken++
		took.Task, took.Asked = t, asked
	}
	return took
}

// answerOne answers one request with the rights of the task's requester
// under the rules of an answer URL, recorded as by's, with the stored task as
// it is after.
func (s *Service) answerOne(ctx context.Context, requester, taskID string, answer Answer, by Answerer, idem idem.Key) (Task, bool, error) {
	cmd := Command{Kind: CmdRespond, OpenOnly: true, Responses: []Answer{answer}, Answerer: by}
	reply, err := s.run(ctx, authz.Principal{ID: requester}, taskID, cmd, idem)
	if err != nil {
		return Task{}, false, answerError(err)
	}
	done, err := decodeTask(reply.JSON)
	if err != nil {
		return Task{}, false, err
	}
	return done, reply.Replayed, nil
}

// resolveAnswer finds the request of a token hash: from this replica's
// cache (when useCache), or with one read of the store.
func (s *Service) resolveAnswer(ctx context.Context, part int, hash string, useCache bool) (answerRef, bool, error) {
	if ref, ok := s.answers.Get(hash); useCache && ok && tokens.SameHash(ref.Hash, hash) {
		return ref, true, nil
	}
	raw, err := s.store.AnswerByToken(ctx, part, hash)
	ref, err := store.Decode[answerRef]("answer token", raw, err)
	if err != nil {
		return answerRef{}, false, err
	}
	if !tokens.SameHash(ref.Hash, hash) {
		return answerRef{}, false, problem.ErrNotFound
	}
	s.answers.Put(hash, ref, nil)
	return ref, false, nil
}

// awaits reports whether the task still waits for an answer to the request.
func (t Task) awaits(requestID string) bool {
	if t.Status != InputRequired {
		return false
	}
	for _, r := range t.InputRequests {
		if r.RequestID == requestID {
			return true
		}
	}
	return false
}

// answerError turns what respond refused into what an answer URL says: the
// request is closed, with no task in the error (its holder may not read it);
// a field is named as the answer's body names it.
func answerError(err error) error {
	var verr *problem.ValidationError
	if errors.As(err, &verr) {
		field := verr.Field
		if i := strings.LastIndexByte(field, '.'); i >= 0 {
			field = field[i+1:]
		} else if strings.HasPrefix(field, "responses") {
			field = "optionId"
		}
		return &problem.ValidationError{Field: field, Message: verr.Message}
	}
	for _, closed := range []error{ErrTerminal, ErrNotInputRequired, ErrUnknownRequest, ErrInputConflict, ErrInputClosed, problem.ErrNotFound} {
		if errors.Is(err, closed) {
			return ErrInputClosed
		}
	}
	return err
}
