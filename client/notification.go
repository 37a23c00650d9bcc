package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/taskhook/taskhook/stdwebhooks"
)

// NotificationTolerance is how far a notification's webhook-timestamp may be
// from the receiver's clock, either way, before it is refused as a replay.
const NotificationTolerance = 5 * time.Minute

// MaxNotificationBytes is the largest notification body NotificationHandler
// reads; a larger one is answered 413.
const MaxNotificationBytes = 1 << 20

var (
	// ErrNotificationSignature is wrapped by VerifyNotification's error when
	// the request is not signed with the endpoint's secret, is signed too
	// far from now, or lacks the signature headers.
	ErrNotificationSignature = errors.New("taskhook: notification signature invalid")
	// ErrNotificationBody is wrapped by VerifyNotification's error when a
	// correctly signed body is not an event.
	ErrNotificationBody = errors.New("taskhook: notification body is not an event")
	// ErrNotificationSecret is VerifyNotification's error when the secret
	// given to it is not a "whsec_..." secret: the receiver's mistake, not
	// the sender's.
	ErrNotificationSecret = errors.New("taskhook: notification secret is not usable")
)

// Notification is an event taskhook delivered to a notify endpoint, with
// what the delivery said about itself.
type Notification struct {
	Event
	// MessageID is the delivery's webhook-id, the event's id: the same on
	// every retry of one message. An event id is unique within its session
	// only, so a receiver that serves several sessions drops repeats by
	// DedupeKey.
	MessageID string
	// SentAt is the delivery's webhook-timestamp: when this attempt was
	// signed.
	SentAt time.Time
}

// DedupeKey names the message across every session: its session and its
// webhook-id. A repeat of a message has the same key.
func (n Notification) DedupeKey() string { return n.SessionID + "/" + n.MessageID }

// VerifyNotification checks that a notification request was signed by
// taskhook with the endpoint's secret (the "whsec_..." shown when the
// endpoint was registered) within NotificationTolerance of now, then decodes
// its body. body must be the request body exactly as received.
func VerifyNotification(secret string, header http.Header, body []byte) (Notification, error) {
	err := stdwebhooks.Verify(secret, header, body, time.Now(), NotificationTolerance)
	switch {
	case errors.Is(err, stdwebhooks.ErrSecret):
		return Notification{}, ErrNotificationSecret
	case err != nil:
		return Notification{}, fmt.Errorf("%w: %w", ErrNotificationSignature, err)
	}
	var ev Event
	if err := json.Unmarshal(body, &ev); err != nil {
		return Notification{}, fmt.Errorf("%w: %w", ErrNotificationBody, err)
	}
	if ev.Type == "" {
		return Notification{}, fmt.Errorf("%w: it has no type", ErrNotificationBody)
	}
	// Verify accepted the timestamp, so it is plain digits.
	unix, _ := strconv.ParseInt(strings.TrimSpace(header.Get(stdwebhooks.HeaderTimestamp)), 10, 64)
	return Notification{
		Event:     ev,
		MessageID: strings.TrimSpace(header.Get(stdwebhooks.HeaderID)),
		SentAt:    time.Unix(unix, 0).UTC(),
	}, nil
}

// NotificationHandler is a notify endpoint: it verifies each POST with
// VerifyNotification and hands the event to fn.
//
//	http.Handle("/taskhook", client.NotificationHandler(secret, func(ctx context.Context, ev client.Event) error {
//		return wake(ctx, ev)
//	}))
//
// It answers 204 when fn returns nil, and 500 when fn fails, so that taskhook
// delivers the event again later; a delivery may come more than once, and
// ev.ID tells a repeat. It answers 401 to a request not signed with secret,
// 400 to a body that is not an event, 413 to a body above
// MaxNotificationBytes, 405 to anything but POST, and 500 to everything when
// secret itself is not usable, so that no event is lost to a misconfigured
// receiver.
func NotificationHandler(secret string, fn func(context.Context, Event) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxNotificationBytes))
		if err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				http.Error(w, "notification too large", http.StatusRequestEntityTooLarge)
				return
			}
			http.Error(w, "notification body could not be read", http.StatusBadRequest)
			return
		}
		n, err := VerifyNotification(secret, r.Header, body)
		switch {
		case errors.Is(err, ErrNotificationSignature):
			http.Error(w, "notification signature invalid", http.StatusUnauthorized)
			return
		case errors.Is(err, ErrNotificationBody):
			http.Error(w, "notification body is not an event", http.StatusBadRequest)
			return
		case err != nil:
			http.Error(w, "notification receiver misconfigured", http.StatusInternalServerError)
			return
		}
		if err := fn(r.Context(), n.Event); err != nil {
			http.Error(w, "notification not handled", http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
}
