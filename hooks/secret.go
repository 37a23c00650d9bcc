package hooks

import (
	"encoding/json"
	"fmt"

	"github.com/taskhook/taskhook/store"
)

// A hook's verify secret is sealed in the vault, bound to the hook's id, so
// the store never holds it in clear and a sealed secret copied to another
// hook does not open.

// sealed is cfg as the store keeps it: the secret sealed, Verify without it.
func (s *Service) sealed(cfg ingestConfig) ingestConfig {
	if cfg.Verify == nil || cfg.Verify.Secret == "" {
		return cfg
	}
	v := *cfg.Verify
	cfg.SealedSecret = s.cfg.Vault.Seal([]byte(v.Secret), "hook", cfg.HookID)
	v.Secret = ""
	cfg.Verify = &v
	return cfg
}

// openConfig reads a stored config with its secret opened. A config kept
// before secrets were sealed (the secret in clear), or sealed with a key
// that no longer seals, comes with the config to store instead, sealed
// again: the ingest of the post that read it writes that, in the same
// script as the post (store.HookIngest.Reseal), so reading never writes.
func (s *Service) openConfig(raw []byte) (ingestConfig, store.Reseal, error) {
	var cfg ingestConfig
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return ingestConfig{}, store.Reseal{}, fmt.Errorf("decode hook config: %w", err)
	}
	if cfg.Verify == nil {
		return cfg, store.Reseal{}, nil
	}
	plain, reseal, err := s.cfg.Vault.OpenKept(cfg.SealedSecret, cfg.Verify.Secret, "hook", cfg.HookID)
	if err != nil {
		return ingestConfig{}, store.Reseal{}, fmt.Errorf("hook %s: verify secret: %w", cfg.HookID, err)
	}
	v := *cfg.Verify
	v.Secret = string(plain)
	cfg.Verify = &v
	cfg.SealedSecret = ""
	if !reseal {
		return cfg, store.Reseal{}, nil
	}
	next, err := json.Marshal(s.sealed(cfg))
	if err != nil { // the secret still serves; the next read tries again
		return cfg, store.Reseal{}, nil
	}
	return cfg, store.Reseal{Read: raw, Sealed: next}, nil
}
