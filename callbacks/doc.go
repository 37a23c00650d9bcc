// Package callbacks is the outbound direction: the worker that delivers
// notifications to the endpoints agents registered (package endpoints).
//
// It owns what one delivery is: the Sender that signs an event the Standard
// Webhooks way and posts it once, dialling only what the SSRF guard of
// package netguard allows, the Outcome that says whether to retry, drop or
// give up on the endpoint, and the Backoff between attempts; the posting of
// a task's message to a Slack endpoint; and the Dispatcher, which reads the
// outbox that makes delivery at-least-once, shares the delivery slots out
// fairly, and settles every entry.
//
// It sits above the endpoint rules and below the services: it imports
// endpoints (the stored endpoint list and its sealed secrets), netguard,
// channels/slack (Render: a leaf, which imports nothing of callbacks),
// stdwebhooks, store, authz, metrics, worker, ids and api/wire. It never
// imports tasks, sessions or hooks: what it reads of tasks comes through an
// interface it declares (AnswerLinks), which app fills. The sender and the
// backoff use the standard library, netguard and stdwebhooks only: no
// store, no Redis, so each is tested against real HTTP servers alone.
// Inbound webhooks are package hooks; the two never share a name.
package callbacks
