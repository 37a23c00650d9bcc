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
// A create body takes the Go type of its free-form JSON values: the server
// keeps them as raw bytes (json.RawMessage), the client takes any value that
// encodes. A hook's create body takes that of its signature check, which
// the server reads with its own rules (hooks.Verify).
//
// It imports nothing of the module (the standard library only).
package wire
