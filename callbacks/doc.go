// Package callbacks is the outbound direction: the service calling back the
// URLs that agents register for notifications.
//
// It owns what one delivery is: the SSRF guard that keeps targets off the
// service's own network (Guard, at registration and again at connect time),
// the Sender that signs an event the Standard Webhooks way and posts it once,
// the Outcome that says whether to retry, drop or give up on the endpoint,
// and the Backoff between attempts. The outbox that makes delivery
// at-least-once, and the dispatcher that reads it, call these.
//
// The guard, the sender and the backoff import the standard library and
// stdwebhooks only: no store, no Redis, so each is tested against
// real HTTP servers alone. Inbound webhooks are package hooks; the two never
// share a name.
package callbacks
