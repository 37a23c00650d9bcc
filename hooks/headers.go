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

// stored is storedHeaders as keptHeaders looks them up: each canonical
// name, as the server makes every request's names, and the lower-case
// name an event stores it under.
var stored = func() [][2]string {
	out := make([][2]string, len(storedHeaders))
	for i, name := range storedHeaders {
		out[i] = [2]string{http.CanonicalHeaderKey(name), strings.ToLower(name)}
	}
	return out
}()

// keptHeaders returns the headers an event stores, by lower-case name: the
// allowlist and the hook's dedupe header, minus every secret header and the
// hook's own signature header. Each keeps its first value, cut to 1 KiB.
// The allowlist's names are made canonical once (stored), not per request.
func keptHeaders(h http.Header, cfg ingestConfig) map[string]string {
	out := map[string]string{}
	signature := ""
	if cfg.Verify != nil && cfg.Verify.Header != "" {
		signature = http.CanonicalHeaderKey(cfg.Verify.Header)
	}
	keep := func(name, lower string) {
		if secretHeaders[name] || name == signature {
			return
		}
		vs := h[name]
		if len(vs) == 0 || vs[0] == "" {
			return
		}
		v := vs[0]
		if len(v) > maxStoredHeaderValue {
			v = v[:maxStoredHeaderValue]
		}
		out[lower] = v
	}
	for _, name := range stored {
		keep(name[0], name[1])
	}
	if cfg.DedupeHeader != "" {
		name := http.CanonicalHeaderKey(cfg.DedupeHeader)
		keep(name, strings.ToLower(name))
	}
	return out
}
