// Package wire holds the JSON shapes of taskhook's HTTP API that the server
// and the Go client share: one definition of each body, status, event type
// and error code, with no logic beyond reading them and no dependency but
// the standard library.
//
// A shape that holds timestamps takes their Go type as a parameter, because
// the two sides hold them differently on purpose: the client decodes them
// into time.Time, and the server writes events.Time, which always shows
// milliseconds ("2026-11-30T10:19:24.670Z"). Task also takes the Go type of
// its status: a string in the client, tasks.Status (with the state
// machine's rules) on the server. Everything else is the same type on both
// sides.
//
// It imports nothing of the module (the standard library only).
package wire
