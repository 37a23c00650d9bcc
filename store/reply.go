package store

import (
	"fmt"
	"strconv"
)

// scriptReply is a script's answer: an outcome word, then what that outcome
// carries. Each script's parser reads the words its header lists, and only
// those.
type scriptReply []any

// replies are the answers one script may give, by outcome word, as its
// header's Returns line lists them: what each means.
type replies[R any] map[string]func(scriptReply) (R, error)

// parser reads the script's answers; a word the script does not list is an
// error.
func (rs replies[R]) parser(script string) func(any) (R, error) {
	return func(v any) (R, error) {
		var zero R
		r, err := asReply(v)
		if err != nil {
			return zero, fmt.Errorf("%s: %w", script, err)
		}
		read, ok := rs[r.word()]
		if !ok {
			return zero, r.unexpected(script)
		}
		return read(r)
	}
}

// is is an answer that carries nothing but its outcome.
func is(o Outcome) func(scriptReply) (Result, error) {
	return func(scriptReply) (Result, error) { return Result{Outcome: o}, nil }
}

// okEvents is {'ok', id...}: applied, with the ids of what it appended.
func okEvents(r scriptReply) (Result, error) { return Result{Outcome: OK, EventIDs: r.strs(1)}, nil }

// replayed is {'replay', body}: a repeat of a caller's key with the same
// body, answered with the first response.
func replayed(r scriptReply) (Result, error) {
	return Result{Outcome: Replayed, ReplayBody: []byte(r.str(1))}, nil
}

// idTaken is {'exists'}: see errIDTaken.
func idTaken(scriptReply) (Result, error) { return Result{}, errIDTaken }

// asReply reads a script's answer as a list with an outcome word first.
func asReply(v any) (scriptReply, error) {
	r, ok := v.([]any)
	if !ok || len(r) == 0 {
		return nil, fmt.Errorf("script reply %T is not an outcome list", v)
	}
	if _, ok := r[0].(string); !ok {
		return nil, fmt.Errorf("script reply starts with %T, not an outcome word", r[0])
	}
	return r, nil
}

// word is the outcome word.
func (r scriptReply) word() string { return r.str(0) }

// str is member i as text (a string, or an integer written out), "" when
// there is none.
func (r scriptReply) str(i int) string {
	if i < len(r) {
		switch v := r[i].(type) {
		case string:
			return v
		case int64:
			return strconv.FormatInt(v, 10)
		}
	}
	return ""
}

// int is member i as an integer (sent as one, or as its digits), 0 when
// there is none.
func (r scriptReply) int(i int) int64 {
	if i < len(r) {
		return toInt(r[i])
	}
	return 0
}

// strs are the members from i on, as text.
func (r scriptReply) strs(from int) []string {
	var out []string
	for i := from; i < len(r); i++ {
		out = append(out, r.str(i))
	}
	return out
}

// unexpected is the error for an outcome word the script's header does not
// list.
func (r scriptReply) unexpected(script string) error {
	return fmt.Errorf("%s: unexpected reply %q", script, r.word())
}

// errIDTaken is a create whose new id is taken already: never in practice
// (ids carry 130 random bits), and no caller can do better than fail, but the
// scripts refuse rather than overwrite a record.
var errIDTaken = fmt.Errorf("the new record's id is taken")

func toInt(v any) int64 {
	switch n := v.(type) {
	case int64:
		return n
	case string:
		i, _ := strconv.ParseInt(n, 10, 64)
		return i
	}
	return 0
}
