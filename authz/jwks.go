package authz

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"os"
	"slices"
	"strings"

	"github.com/golang-jwt/jwt/v5"
)

// Bounds on RSA moduli from a JWKS file: below the minimum a key is too weak
// to trust, above the maximum verification gets slow enough to be a lever for
// denial of service.
const (
	minRSABits = 2048
	maxRSABits = 8192
)

// keySet holds the public keys usable with one JWS algorithm.
type keySet struct {
	all   []jwt.VerificationKey
	byKID map[string]jwt.VerificationKey
}

func (s *keySet) add(kid string, key jwt.VerificationKey) error {
	if kid != "" {
		if _, dup := s.byKID[kid]; dup {
			return fmt.Errorf("duplicate kid %q", kid)
		}
		if s.byKID == nil {
			s.byKID = make(map[string]jwt.VerificationKey)
		}
		s.byKID[kid] = key
	}
	s.all = append(s.all, key)
	return nil
}

// jwk is one entry of a JSON Web Key Set (RFC 7517), public members only.
type jwk struct {
	Kty    string   `json:"kty"`
	Kid    string   `json:"kid"`
	Use    string   `json:"use"`
	Alg    string   `json:"alg"`
	KeyOps []string `json:"key_ops"`
	Crv    string   `json:"crv"`
	N      string   `json:"n"`
	E      string   `json:"e"`
	X      string   `json:"x"`
	Y      string   `json:"y"`
}

// loadJWKS reads the JWKS file at path and returns its usable keys by
// algorithm name.
func loadJWKS(path string) (map[string]*keySet, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("authz: read JWKS file: %w", err)
	}
	keys, err := parseJWKS(data)
	if err != nil {
		return nil, fmt.Errorf("authz: JWKS file %s: %w", path, err)
	}
	return keys, nil
}

// parseJWKS parses a JWKS document. Keys meant for something else (another
// algorithm, another curve, encryption) are skipped, because real key sets
// often carry them; a key we would use but cannot parse is an error, as is a
// set with no usable key at all.
func parseJWKS(data []byte) (map[string]*keySet, error) {
	var doc struct {
		Keys []jwk `json:"keys"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, errors.New("not a valid JWKS document")
	}
	sets := make(map[string]*keySet)
	for i, k := range doc.Keys {
		alg, key, err := k.publicKey()
		if err != nil {
			return nil, fmt.Errorf("key %d (kid %q): %w", i, k.Kid, err)
		}
		if key == nil {
			continue
		}
		set := sets[alg]
		if set == nil {
			set = &keySet{}
			sets[alg] = set
		}
		if err := set.add(k.Kid, key); err != nil {
			return nil, fmt.Errorf("key %d: %w", i, err)
		}
	}
	if len(sets) == 0 {
		return nil, errors.New("no usable RSA, P-256 or Ed25519 signing key")
	}
	return sets, nil
}

// publicKey returns the algorithm and parsed key of k, or a nil key when k is
// not a signing key this package uses.
func (k jwk) publicKey() (string, jwt.VerificationKey, error) {
	if k.Use != "" && k.Use != "sig" {
		return "", nil, nil
	}
	if k.KeyOps != nil && !slices.Contains(k.KeyOps, "verify") {
		return "", nil, nil
	}
	switch k.Kty {
	case "RSA":
		if k.Alg != "" && k.Alg != jwt.SigningMethodRS256.Alg() {
			return "", nil, nil
		}
		key, err := k.rsaKey()
		return jwt.SigningMethodRS256.Alg(), key, err
	case "EC":
		if k.Crv != "P-256" || (k.Alg != "" && k.Alg != jwt.SigningMethodES256.Alg()) {
			return "", nil, nil
		}
		key, err := k.ecKey()
		return jwt.SigningMethodES256.Alg(), key, err
	case "OKP":
		// "Ed25519" is the fully specified name of RFC 9864 for the same algorithm.
		if k.Crv != "Ed25519" || (k.Alg != "" && k.Alg != jwt.SigningMethodEdDSA.Alg() && k.Alg != "Ed25519") {
			return "", nil, nil
		}
		key, err := k.edKey()
		return jwt.SigningMethodEdDSA.Alg(), key, err
	default:
		return "", nil, nil
	}
}

func (k jwk) rsaKey() (*rsa.PublicKey, error) {
	n, e, err := decodeMembers("n", k.N, "e", k.E)
	if err != nil {
		return nil, err
	}
	modulus := new(big.Int).SetBytes(n)
	if bits := modulus.BitLen(); bits < minRSABits || bits > maxRSABits {
		return nil, fmt.Errorf("RSA modulus of %d bits, want %d to %d", bits, minRSABits, maxRSABits)
	}
	exponent := new(big.Int).SetBytes(e)
	if exponent.BitLen() > 31 || exponent.Int64() < 3 || exponent.Bit(0) == 0 {
		return nil, errors.New("RSA exponent must be odd, at least 3 and below 2^31")
	}
	return &rsa.PublicKey{N: modulus, E: int(exponent.Int64())}, nil
}

func (k jwk) ecKey() (*ecdsa.PublicKey, error) {
	x, y, err := decodeMembers("x", k.X, "y", k.Y)
	if err != nil {
		return nil, err
	}
	// RFC 7518 section 6.2.1.2: coordinates are the full length of the field.
	if len(x) != 32 || len(y) != 32 {
		return nil, errors.New("P-256 coordinates must be 32 bytes each")
	}
	point := make([]byte, 0, 65)
	point = append(point, 4) // uncompressed
	point = append(point, x...)
	point = append(point, y...)
	key, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), point)
	if err != nil {
		return nil, errors.New("not a point on P-256")
	}
	return key, nil
}

func (k jwk) edKey() (ed25519.PublicKey, error) {
	x, err := decodeMember("x", k.X)
	if err != nil {
		return nil, err
	}
	if len(x) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("Ed25519 key must be %d bytes", ed25519.PublicKeySize)
	}
	return ed25519.PublicKey(x), nil
}

// decodeMembers decodes the two base64url members of a key that has two,
// the first one first.
func decodeMembers(name1, value1, name2, value2 string) ([]byte, []byte, error) {
	b1, err := decodeMember(name1, value1)
	if err != nil {
		return nil, nil, err
	}
	b2, err := decodeMember(name2, value2)
	return b1, b2, err
}

// decodeMember decodes a base64url key member. Padding is tolerated because
// some tools emit it.
func decodeMember(name, value string) ([]byte, error) {
	if value == "" {
		return nil, fmt.Errorf("missing %q", name)
	}
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(value, "="))
	if err != nil || len(b) == 0 {
		return nil, fmt.Errorf("%q is not base64url", name)
	}
	return b, nil
}
