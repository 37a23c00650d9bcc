package handlers

import (
	"context"
	"net/http"

	"github.com/taskhook/taskhook/authz"
	"github.com/taskhook/taskhook/idem"
	"github.com/taskhook/taskhook/paging"
)

// The shapes the resource routes share: a write, a read of one record, a
// list.

// write runs one write of a route for the principal under its idempotency
// key, with the body decoded into an In.
type write[In any] func(ctx context.Context, p authz.Principal, in In, key idem.Key) (idem.Reply, error)

// serveWrite answers a write route: the body of the POST decoded strictly
// into an In, the write run, and its stored reply written with status (or
// its error).
func serveWrite[In any](a *api, w http.ResponseWriter, r *http.Request, status int, run write[In]) {
	var in In
	p, idem, ok := a.decodePost(w, r, &in)
	if !ok {
		return
	}
	reply, err := run(r.Context(), p, in, idem)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeReplayable(w, status, reply.JSON, reply.Replayed)
}

// creates is the handler of a route that creates a record with run:
// serveWrite with 201, and Location at base and the id the reply's member
// idMember holds.
func creates[In any](a *api, run write[In], base, idMember string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		serveWrite(a, w, r, http.StatusCreated, func(ctx context.Context, p authz.Principal, in In, key idem.Key) (idem.Reply, error) {
			reply, err := run(ctx, p, in, key)
			if err == nil {
				setLocation(w, base, reply.JSON, idMember)
			}
			return reply, err
		})
	}
}

// writeRead answers a read with the stored JSON it found, or with its
// error.
func (a *api) writeRead(w http.ResponseWriter, r *http.Request, raw []byte, err error) {
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeRaw(w, http.StatusOK, raw)
}

// serveList answers a list route: ?limit= (1..100, default 50) read,
// ?cursor= handed on as it came (the service reads it), one page listed
// with them and written.
func (a *api) serveList(w http.ResponseWriter, r *http.Request, list func(cursor string, limit int) (paging.Page, error)) {
	limit, err := parseLimit(r, 50, 100)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	page, err := list(r.URL.Query().Get("cursor"), limit)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeList(w, page)
}
