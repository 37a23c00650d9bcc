// Package endpoints is the rule of what a notification endpoint may be: the
// Registrar checks an endpoint request (its URL well formed and, through the
// SSRF guard of package netguard, leading nowhere a receiver may not be; its
// event types; its signing secret; a Slack endpoint's channel, against the
// destinations of package channels/slack), seals its secret in the vault,
// and adds, lists and removes the endpoints of a session or task, and reads
// a session's dead letters. It also owns how the store keeps endpoints: the
// list without secrets (Views, ViewJSON) and each secret sealed to its
// endpoint (SealSecret, OpenSecret).
//
// It sits below the services (tasks and sessions register the endpoints of
// a create through it) and below package callbacks, which delivers to the
// endpoints it registered and reads their records and secrets here. It
// imports store, authz, netguard, replay, channels/slack (a leaf: its
// destinations), stdwebhooks (secrets), ids, events, problem and api/wire;
// never callbacks, nor a service.
package endpoints
