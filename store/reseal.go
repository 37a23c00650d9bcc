package store

import "context"

// Secrets the service keeps (hook verification secrets, notification
// endpoint secrets) are sealed by their owners before they reach the store.
// One written before that, or sealed with a key that no longer seals
// (authz.Vault.OpenKept decides), is sealed again by the next write its use
// makes: a hook's by the ingest of its next post (HookIngest.Reseal), an
// endpoint's by the dispatcher before its next delivery
// (ResealEndpointSecret). Both write through the prelude's reseal.

// Reseal is a stored value to replace by the same secret sealed again: Read
// is what the field held when it was read, Sealed what to write instead,
// only while the field still holds Read. The zero Reseal replaces nothing.
type Reseal struct {
	Read   []byte
	Sealed []byte
}

var parseFieldReseal = replies[bool]{
	"ok":      func(scriptReply) (bool, error) { return true, nil },
	"changed": func(scriptReply) (bool, error) { return false, nil },
}.parser("field_reseal")

// ResealEndpointSecret replaces the secret of an entry's endpoint (what
// Targets read as old) by next; done is false when the record is gone or
// the secret changed since.
func (s *Store) ResealEndpointSecret(ctx context.Context, p int, e OutboxEntry, old, next string) (done bool, err error) {
	return s.scripts.fieldReseal.run(ctx, s, []string{s.EndpointRecord(p, e)}, recordFieldSecret+e.EndpointID, old, next)
}
