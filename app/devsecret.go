package app

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// devSecret is the HS256 secret of a server with none configured (the
// embedded store only): made at start, or, with a file, read from it and
// made into it (mode 0600) the first time, so the development token printed
// at start, and a console tab signed in with it, outlive a restart.
func devSecret(file string) ([]byte, error) {
	if file == "" {
		return newDevSecret(), nil
	}
	secret, err := readDevSecret(file)
	if !errors.Is(err, fs.ErrNotExist) {
		return secret, err
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return nil, fmt.Errorf("TASKHOOK_DEV_SECRET_FILE: %w", err)
	}
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return readDevSecret(file) // another start made it first
	}
	if err != nil {
		return nil, fmt.Errorf("TASKHOOK_DEV_SECRET_FILE: %w", err)
	}
	secret = newDevSecret()
	_, err = f.Write(append(secret, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(file)
		return nil, fmt.Errorf("TASKHOOK_DEV_SECRET_FILE: %w", err)
	}
	return secret, nil
}

// readDevSecret reads a secret file that only its owner may read.
func readDevSecret(file string) ([]byte, error) {
	info, err := os.Stat(file)
	if err != nil {
		return nil, err
	}
	if info.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("TASKHOOK_DEV_SECRET_FILE: %s may be read by others (mode %04o): chmod 600 it, or remove it for a new one",
			file, info.Mode().Perm())
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("TASKHOOK_DEV_SECRET_FILE: %w", err)
	}
	secret := bytes.TrimSpace(raw)
	if len(secret) < 32 {
		return nil, fmt.Errorf("TASKHOOK_DEV_SECRET_FILE: %s holds fewer than 32 bytes: remove it for a new one", file)
	}
	return secret, nil
}

// newDevSecret is 256 random bits, written as base64url.
func newDevSecret() []byte {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return []byte(base64.RawURLEncoding.EncodeToString(b))
}
