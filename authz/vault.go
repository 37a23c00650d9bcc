package authz

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Vault seals the secrets the service stores (provider tokens, sign-in
// verifiers) with AES-256-GCM. It holds one or more keys, each with an id:
// the first seals, every one opens, so a key is rotated by putting the new
// one first and dropping the old one once nothing sealed with it is left.
//
// A sealed value is "<key id>.<base64url of nonce and ciphertext>": the key
// id travels with it. Each seal names what the value belongs to (for a
// provider token: the requester and the connection) as associated data, so a
// value copied to another slot does not open.
type Vault struct {
	sealWith string
	keys     map[string]cipher.AEAD
}

// ErrSealed is what Open answers for a value it cannot open: a key it does
// not hold, a value changed or moved, or not a sealed value at all.
var ErrSealed = errors.New("vault: the value does not open")

// VaultKeyBytes is the size of a vault key: AES-256.
const VaultKeyBytes = 32

var vaultKeyID = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)

// ParseVaultKeys reads TASKHOOK_VAULT_KEYS: "id:base64key,id:base64key",
// each key 32 bytes in base64 (standard or URL alphabet, padded or not). The
// first seals.
func ParseVaultKeys(spec string) (*Vault, error) {
	v := &Vault{keys: map[string]cipher.AEAD{}}
	for i, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		id, b64, ok := strings.Cut(part, ":")
		if !ok || !vaultKeyID.MatchString(id) {
			return nil, fmt.Errorf("vault key %d: must be id:base64key, the id 1 to 32 of A-Z a-z 0-9 _ -", i+1)
		}
		if _, dup := v.keys[id]; dup {
			return nil, fmt.Errorf("vault key %d: id %q is used twice", i+1, id)
		}
		key, err := DecodeKey(b64)
		if err != nil || len(key) != VaultKeyBytes {
			return nil, fmt.Errorf("vault key %q: must be base64 of %d bytes", id, VaultKeyBytes)
		}
		if err := v.add(id, key); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// NewRandomVault makes a vault with one random key, for a store whose data
// lives no longer than the process (the embedded one).
func NewRandomVault() *Vault {
	key := make([]byte, VaultKeyBytes)
	_, _ = rand.Read(key)
	v := &Vault{keys: map[string]cipher.AEAD{}}
	_ = v.add("process", key) // a valid id and a 32-byte key
	return v
}

// NewVault makes an empty vault; AddKey gives it keys.
func NewVault() *Vault { return &Vault{keys: map[string]cipher.AEAD{}} }

// AddKey adds a 32-byte key under id. The first key added seals; later ones
// only open (a key being retired, or one derived from another setting).
func (v *Vault) AddKey(id string, key []byte) error {
	if !vaultKeyID.MatchString(id) {
		return fmt.Errorf("vault key id %q: must be 1 to 32 of A-Z a-z 0-9 _ -", id)
	}
	if _, dup := v.keys[id]; dup {
		return fmt.Errorf("vault key id %q is used twice", id)
	}
	if len(key) != VaultKeyBytes {
		return fmt.Errorf("vault key %q: must be %d bytes", id, VaultKeyBytes)
	}
	return v.add(id, key)
}

// Holds says whether the vault holds a key with this id.
func (v *Vault) Holds(id string) bool {
	_, ok := v.keys[id]
	return ok
}

// Current says whether sealed was sealed with the key that seals now: a
// value sealed with an older key opens, and is worth sealing again.
func (v *Vault) Current(sealed string) bool {
	id, _, ok := strings.Cut(sealed, ".")
	return ok && id == v.sealWith
}

// OpenKept opens a secret as the store keeps it, and says whether it should
// be sealed again: the one rule of that for every secret the service
// stores. sealed is what Seal made; a version from before secrets were
// sealed kept them in clear, and for such a one sealed is "" and clear is
// the secret. reseal is true for a secret kept in clear and for one sealed
// with a key that no longer seals (it opens: the vault still holds that
// key).
func (v *Vault) OpenKept(sealed, clear string, belongsTo ...string) (plain []byte, reseal bool, err error) {
	if sealed == "" {
		return []byte(clear), clear != "", nil
	}
	plain, err = v.Open(sealed, belongsTo...)
	if err != nil {
		return nil, false, err
	}
	return plain, !v.Current(sealed), nil
}

func (v *Vault) add(id string, key []byte) error {
	block, err := aes.NewCipher(key)
	if err != nil {
		return fmt.Errorf("vault key %q: %w", id, err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return fmt.Errorf("vault key %q: %w", id, err)
	}
	if v.sealWith == "" {
		v.sealWith = id
	}
	v.keys[id] = aead
	return nil
}

// Seal encrypts plain with the first key, bound to what it belongs to.
func (v *Vault) Seal(plain []byte, belongsTo ...string) string {
	aead := v.keys[v.sealWith]
	nonce := make([]byte, aead.NonceSize())
	_, _ = rand.Read(nonce)
	out := aead.Seal(nonce, nonce, plain, associated(v.sealWith, belongsTo))
	return v.sealWith + "." + base64.RawURLEncoding.EncodeToString(out)
}

// Open decrypts what Seal made with the same belongsTo, with whichever key
// sealed it.
func (v *Vault) Open(sealed string, belongsTo ...string) ([]byte, error) {
	id, b64, ok := strings.Cut(sealed, ".")
	if !ok {
		return nil, ErrSealed
	}
	aead, ok := v.keys[id]
	if !ok {
		return nil, ErrSealed
	}
	raw, err := base64.RawURLEncoding.DecodeString(b64)
	if err != nil || len(raw) < aead.NonceSize()+aead.Overhead() {
		return nil, ErrSealed
	}
	plain, err := aead.Open(nil, raw[:aead.NonceSize()], raw[aead.NonceSize():], associated(id, belongsTo))
	if err != nil {
		return nil, ErrSealed
	}
	return plain, nil
}

// associated is the associated data of a seal: the key id and each part,
// length-prefixed so ("ab","c") and ("a","bc") differ.
func associated(keyID string, parts []string) []byte {
	out := make([]byte, 0, 64)
	for _, p := range append([]string{keyID}, parts...) {
		out = binary.BigEndian.AppendUint32(out, uint32(len(p)))
		out = append(out, p...)
	}
	return out
}

// DecodeKey reads a key in base64, standard or URL alphabet, padded or not:
// the forms operators paste keys in.
func DecodeKey(s string) ([]byte, error) {
	var err error
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		var k []byte
		if k, err = enc.DecodeString(s); err == nil {
			return k, nil
		}
	}
	return nil, err
}
