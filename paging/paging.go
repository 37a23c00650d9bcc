// Package paging holds one page of a list as the services answer it, and
// the cursor that goes on from it. A cursor is opaque outside this package:
// the store pages by Position, the services and the faces hand the cursor
// on as text, and this is the one place it is written and read. It imports
// only problem.
package paging

import (
	"encoding/base64"
	"strconv"
	"strings"

	"github.com/taskhook/taskhook/problem"
)

// Page is one page of a list: each item's JSON, and the cursor of the page
// after it, "" on the last.
type Page struct {
	Items [][]byte
	Next  string
}

// Position is a place in a list ordered newest first: items strictly after
// it (older, or as old with a smaller id) come next.
type Position struct {
	Score int64
	ID    string
}

// Cursor is the cursor of the page that goes on after p: base64url of
// "score:id", "" for nil (nothing comes after).
func (p *Position) Cursor() string {
	if p == nil {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(p.Score, 10) + ":" + p.ID))
}

// After is the position a cursor goes on from: nil for "" (the list's
// start), problem.ErrBadCursor for a cursor Cursor did not write.
func After(cursor string) (*Position, error) {
	if cursor == "" {
		return nil, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return nil, problem.ErrBadCursor
	}
	score, id, ok := strings.Cut(string(raw), ":")
	n, err := strconv.ParseInt(score, 10, 64)
	if !ok || err != nil || id == "" {
		return nil, problem.ErrBadCursor
	}
	return &Position{Score: n, ID: id}, nil
}
