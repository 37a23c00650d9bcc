package hooks

import (
	"net/http"
	"strings"
)

// storedHeaders are the request headers a stored event keeps: what tells a
// reader what the event is, never what proves who sent it.
var storedHeaders = []string{
	"Content-Type", "User-Agent", "X-Request-Id", "X-Correlation-Id", "Idempotency-Key",
	"Webhook-Id", "Webhook-Timestamp",
	"X-GitHub-Event", "X-GitHub-Delivery", "X-GitHub-Hook-Id",
	"X-GitHub-Hook-Installation-Target-Id", "X-GitHub-Hook-Installation-Target-Type",
	"X-Gitlab-Event", "X-Gitlab-Event-Uuid",
	"X-Slack-Request-Timestamp", "X-Slack-Retry-Num", "X-Slack-Retry-Reason",
	"X-Event-Type", "X-Event-Id",
}

// secretHeaders are never stored, whatever a hook's configuration names:
// credentials, cookies and signatures.
var secretHeaders = map[string]bool{
	"Authorization": true, "Proxy-Authorization": true, "Cookie": true, "Set-Cookie": true,
	"X-Hub-Signature": true, "X-Hub-Signature-256": true, "Stripe-Signature": true,
	"X-Slack-Signature": true, "Webhook-Signature": true, "X-Gitlab-Token": true,
	"X-Api-Key": true, "Api-Key": true, "X-Auth-Token": true,
}

const maxStoredHeaderValue = 1 << 10

// keptHeaders returns the headers an event stores, by lower-case name: the
// allowlist and the hook's dedupe header, minus every secret header and the
// hook's own signature header. Each keeps its first value, cut to 1 KiB.
func keptHeaders(h http.Header, cfg ingestConfig) map[string]string {
	out := map[string]string{}
	never := func(name string) bool {
		return secretHeaders[name] || (cfg.Verify != nil && cfg.Verify.Header != "" &&
			http.CanonicalHeaderKey(cfg.Verify.Header) == name)
	}
	keep := func(name string) {
		name = http.CanonicalHeaderKey(name)
		if never(name) {
			return
		}
		v := h.Get(name)
		if v == "" {
			return
		}
		if len(v) > maxStoredHeaderValue {
			v = v[:maxStoredHeaderValue]
		}
		out[strings.ToLower(name)] = v
	}
	for _, name := range storedHeaders {
		keep(name)
	}
	if cfg.DedupeHeader != "" {
		keep(cfg.DedupeHeader)
	}
	return out
}
