package store

import "context"

// Secrets the service keeps (hook verification secrets, notification
// endpoint secrets) are sealed by their owners before they reach the store.
// Those written before that, or sealed with a key that no longer seals, are
// sealed again when they are next read, through these.

var parseFieldReseal = replies[bool]{
	"ok":      func(scriptReply) (bool, error) { return true, nil },
	"changed": func(scriptReply) (bool, error) { return false, nil },
}.parser("field_reseal")

// ResealHookConfig replaces a hook's ingest config (what HookByToken read
// as old) by next; done is false when the hook is gone or its config
// changed since.
func (s *Store) ResealHookConfig(ctx context.Context, p int, hookID string, old, next []byte) (done bool, err error) {
	return s.scripts.fieldReseal.run(ctx, s, []string{s.Keys.Hook(p, hookID)}, hookFieldConfig, old, next)
}

// ResealEndpointSecret replaces the secret of an entry's endpoint (what
// Targets read as old) by next; done is false when the record is gone or
// the secret changed since.
func (s *Store) ResealEndpointSecret(ctx context.Context, p int, e OutboxEntry, old, next string) (done bool, err error) {
	return s.scripts.fieldReseal.run(ctx, s, []string{s.EndpointRecord(p, e)}, "sec:"+e.EndpointID, old, next)
}
