// Package callbacks is the outbound direction: the service calling back the
// URLs that agents register for notifications.
//
// It owns what one delivery is: the Sender that signs an event the Standard
// Webhooks way and posts it once, the Outcome that says whether to retry,
// drop or give up on the endpoint, and the Backoff between attempts. The
// outbox that makes delivery at-least-once, and the dispatcher that reads
// it, call these.
//
// The sender dials only what the SSRF guard of package netguard allows (the
// registrar checks each URL with the same guard). The sender and the backoff
// use the standard library, netguard and stdwebhooks only: no store, no
// Redis, so each is tested against real HTTP servers alone. Inbound webhooks
// are package hooks; the two never share a name.
package callbacks
