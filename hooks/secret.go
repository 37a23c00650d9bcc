package hooks

import (
	"context"
	"encoding/json"
	"fmt"
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
// that no longer seals, is sealed again in the store, once: the first
// replica to read it does it.
func (s *Service) openConfig(ctx context.Context, part int, raw []byte) (ingestConfig, error) {
	var cfg ingestConfig
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return ingestConfig{}, fmt.Errorf("decode hook config: %w", err)
	}
	if cfg.Verify == nil {
		return cfg, nil
	}
	reseal := cfg.SealedSecret == "" && cfg.Verify.Secret != ""
	if cfg.SealedSecret != "" {
		plain, err := s.cfg.Vault.Open(cfg.SealedSecret, "hook", cfg.HookID)
		if err != nil {
			return ingestConfig{}, fmt.Errorf("hook %s: verify secret: %w", cfg.HookID, err)
		}
		v := *cfg.Verify
		v.Secret = string(plain)
		cfg.Verify = &v
		reseal = !s.cfg.Vault.Current(cfg.SealedSecret)
		cfg.SealedSecret = ""
	}
	if reseal {
		next, err := json.Marshal(s.sealed(cfg))
		if err == nil {
			_, err = s.store.ResealHookConfig(ctx, part, cfg.HookID, raw, next)
		}
		if err != nil {
			// The secret still serves; the next replica to read it tries again.
			s.log.WarnContext(ctx, "hook verify secret not sealed again", "hookId", cfg.HookID, "err", err)
		}
	}
	return cfg, nil
}
