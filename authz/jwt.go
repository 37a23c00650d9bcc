package authz

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/golang-jwt/jwt/v5"

	"github.com/taskhook/taskhook/cache"
)

// ErrInvalidToken is wrapped by every error Verify returns. The text after it
// is a short reason that is safe to show a client.
var ErrInvalidToken = errors.New("invalid token")

// rejection is a Verify failure. Its reason is one of the fixed strings
// below, never anything taken from the token, so it cannot leak token or key
// material into a response or a log line.
type rejection string

func (r rejection) Error() string { return ErrInvalidToken.Error() + ": " + string(r) }
func (r rejection) Unwrap() error { return ErrInvalidToken }

const (
	errMissingToken    rejection = "missing token"
	errTokenTooLarge   rejection = "token too large"
	errMalformed       rejection = "malformed token"
	errAlgorithm       rejection = "algorithm not allowed"
	errCriticalHeader  rejection = "unsupported critical header"
	errUnknownKID      rejection = "unknown key id"
	errSignature       rejection = "signature invalid"
	errExpired         rejection = "token expired"
	errNotYetValid     rejection = "token not yet valid"
	errIssuedInFuture  rejection = "token issued in the future"
	errMissingExp      rejection = "missing exp claim"
	errMissingSub      rejection = "missing sub claim"
	errMissingAudience rejection = "missing aud claim"
	errAudience        rejection = "audience mismatch"
	errMissingIssuer   rejection = "missing iss claim"
	errIssuer          rejection = "issuer mismatch"
	errTokenRejected   rejection = "token rejected"
	errLifetime        rejection = "token lifetime (exp - iat) above the maximum age"
	errExpiresTooLate  rejection = "token without iat expires beyond the maximum age from now"
	errActFor          rejection = "act_for claim must be a list of non-empty principal ids"
)

// DefaultMaxAge is the longest lifetime a token may have when
// VerifierConfig.MaxAge is zero.
const DefaultMaxAge = 24 * time.Hour

const (
	defaultLeeway = 30 * time.Second
	// RFC 7518 section 3.2: an HS256 key must be at least as long as the hash.
	minHMACSecretLength = 32
)

// maxTokenLength bounds the work one request can make Verify do. Real tokens
// are well under 4 KiB; proxies commonly cap a header line at 8 KiB.
const maxTokenLength = 8 << 10

const (
	algHS256 = "HS256"
	algRS256 = "RS256"
	algES256 = "ES256"
	algEdDSA = "EdDSA"
)

// VerifierConfig says which keys and claims a Verifier accepts. The zero
// value of each field means its default; at least one key source is needed.
type VerifierConfig struct {
	HMACSecret []byte        // HS256 when non-empty; at least 32 bytes (RFC 7518 section 3.2)
	JWKSFile   string        // path to a JWKS JSON file: RSA (RS256), EC P-256 (ES256), OKP Ed25519 (EdDSA) keys, selected by "kid" (a token without kid tries each key of the right type)
	Audience   string        // when set, "aud" must contain it
	Issuer     string        // when set, "iss" must equal it
	Leeway     time.Duration // zero means 30s
	// MaxAge caps how long a token lives: exp - iat must not exceed it, and
	// a token without iat must not expire more than MaxAge (plus the
	// leeway) from now. A stolen token is then worth a bounded time,
	// whatever lifetime its issuer chose. Zero means DefaultMaxAge.
	MaxAge time.Duration
}

// Verifier checks bearer JWTs. It is safe for concurrent use; all keys are
// parsed once by NewVerifier.
type Verifier struct {
	hmacSecret []byte
	keys       map[string]*keySet // JWKS keys by algorithm
	issuer     string
	maxAge     time.Duration
	leeway     time.Duration
	parser     *jwt.Parser
	now        func() time.Time // replaced by tests
	verified   *cache.LRU[verifiedToken]
}

// verifiedCacheSize bounds the tokens a Verifier remembers. A client sends
// the same token on every request until it renews it, so a few thousand
// cover many clients; a token not remembered is verified in full.
const verifiedCacheSize = 4096

// verifiedToken is a token that passed Verify: it stays good until its exp
// plus the leeway, since every other check (signature, nbf, iat, audience,
// issuer, lifetime) can only pass again as time goes forward.
type verifiedToken struct {
	principal Principal
	at        time.Time // when it was verified: a clock set back verifies again
	until     time.Time // exp + leeway: from then on Verify refuses it
}

// NewVerifier parses the configured keys and returns a Verifier. It fails when
// no key is configured, or the JWKS file is unreadable or holds no usable key.
func NewVerifier(cfg VerifierConfig) (*Verifier, error) {
	v := &Verifier{issuer: cfg.Issuer, now: time.Now, verified: cache.New[verifiedToken](verifiedCacheSize)}
	var algs []string
	if len(cfg.HMACSecret) > 0 {
		if len(cfg.HMACSecret) < minHMACSecretLength {
			return nil, fmt.Errorf("authz: HMAC secret must be at least %d bytes", minHMACSecretLength)
		}
		v.hmacSecret = append([]byte(nil), cfg.HMACSecret...)
		algs = append(algs, algHS256)
	}
	if cfg.JWKSFile != "" {
		keys, err := loadJWKS(cfg.JWKSFile)
		if err != nil {
			return nil, err
		}
		v.keys = keys
		for _, alg := range []string{algRS256, algES256, algEdDSA} {
			if keys[alg] != nil {
				algs = append(algs, alg)
			}
		}
	}
	if len(algs) == 0 {
		return nil, errors.New("authz: no JWT key configured: set an HMAC secret or a JWKS file")
	}
	leeway := cfg.Leeway
	switch {
	case leeway < 0:
		return nil, errors.New("authz: JWT leeway must not be negative")
	case leeway == 0:
		leeway = defaultLeeway
	}
	v.leeway = leeway
	switch v.maxAge = cfg.MaxAge; {
	case v.maxAge < 0:
		return nil, errors.New("authz: JWT maximum age must not be negative")
	case v.maxAge == 0:
		v.maxAge = DefaultMaxAge
	}

	opts := []jwt.ParserOption{
		jwt.WithValidMethods(algs),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithLeeway(leeway),
		// Strict base64 makes each signature have exactly one encoding.
		jwt.WithStrictDecoding(),
		jwt.WithTimeFunc(func() time.Time { return v.now() }),
	}
	if cfg.Audience != "" {
		opts = append(opts, jwt.WithAudience(cfg.Audience))
	}
	if cfg.Issuer != "" {
		opts = append(opts, jwt.WithIssuer(cfg.Issuer))
	}
	v.parser = jwt.NewParser(opts...)
	return v, nil
}

// tokenClaims are the claims Verify reads.
type tokenClaims struct {
	jwt.RegisteredClaims
	Scope string `json:"scope,omitempty"`
	// ActFor is kept raw so that a claim of the wrong shape is refused with
	// its own reason, and only once the signature has held.
	ActFor json.RawMessage `json:"act_for,omitempty"`
}

// Verify checks token and returns its principal. Every error wraps
// ErrInvalidToken. A token verified before is answered from memory until it
// expires; the principal's Scopes and ActFor are shared and must not be
// changed.
func (v *Verifier) Verify(token string) (Principal, error) {
	switch {
	case token == "":
		return Principal{}, errMissingToken
	case len(token) > maxTokenLength:
		return Principal{}, errTokenTooLarge
	}
	// Keyed by digest, so the memory held is the same for any token length.
	sum := sha256.Sum256([]byte(token))
	key := string(sum[:])
	now := v.now()
	if e, ok := v.verified.Get(key); ok {
		if !now.Before(e.at) && now.Before(e.until) {
			return e.principal, nil
		}
		v.verified.Drop(key, nil)
	}
	p, err := v.verify(token)
	if err != nil {
		return Principal{}, err
	}
	v.verified.Put(key, verifiedToken{principal: p.principal, at: now, until: p.expires.Add(v.leeway)}, nil)
	return p.principal, nil
}

// verifiedClaims is what a full verification yields.
type verifiedClaims struct {
	principal Principal
	expires   time.Time
}

// verify checks token in full: signature, header and claims.
func (v *Verifier) verify(token string) (verifiedClaims, error) {
	var claims tokenClaims
	parsed, err := v.parser.ParseWithClaims(token, &claims, v.verificationKey)
	if err != nil {
		return verifiedClaims{}, v.reason(parsed, &claims, err)
	}
	if !parsed.Valid {
		return verifiedClaims{}, errTokenRejected
	}
	if err := v.checkLifetime(&claims); err != nil {
		return verifiedClaims{}, err
	}
	if claims.Subject == "" {
		return verifiedClaims{}, errMissingSub
	}
	actFor, err := v.parseActFor(claims.ActFor)
	if err != nil {
		return verifiedClaims{}, err
	}
	return verifiedClaims{
		principal: Principal{ID: v.principalID(claims.Subject), Scopes: parseScopes(claims.Scope), ActFor: actFor},
		expires:   claims.ExpiresAt.Time, // the parser requires exp
	}, nil
}

// principalID is the principal a subject of this verifier's tokens stands
// for. Two issuers may hand out the same sub; the issuer's prefix keeps
// them apart.
func (v *Verifier) principalID(sub string) string {
	if v.issuer == "" {
		return sub
	}
	return v.issuer + "#" + sub
}

// parseActFor reads the act_for claim: absent or null is none; otherwise a
// JSON list of non-empty strings, subjects of the same issuer as the token's
// own sub, namespaced the same way (a token can never name another issuer's
// principal). Anything else refuses the whole token, so a claim its issuer
// got wrong is seen at once rather than quietly granting nothing.
func (v *Verifier) parseActFor(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var subs []string
	if err := json.Unmarshal(raw, &subs); err != nil {
		return nil, errActFor
	}
	if len(subs) == 0 {
		return nil, nil
	}
	ids := make([]string, len(subs))
	for i, sub := range subs {
		if sub == "" {
			return nil, errActFor
		}
		ids[i] = v.principalID(sub)
	}
	return ids, nil
}

// checkLifetime refuses a token that lives longer than the maximum age: by
// its own iat and exp when it has both (no leeway: one clock set both), else
// by how far its exp is from now. The parser has checked exp is there, iat
// is not in the future, and the signature.
func (v *Verifier) checkLifetime(c *tokenClaims) error {
	exp := c.ExpiresAt.Time
	if c.IssuedAt != nil {
		if exp.Sub(c.IssuedAt.Time) > v.maxAge {
			return errLifetime
		}
		return nil
	}
	if exp.Sub(v.now()) > v.maxAge+v.leeway {
		return errExpiresTooLate
	}
	return nil
}

// parseScopes splits a space-separated scope claim; no scopes is nil.
func parseScopes(scope string) []string {
	scopes := strings.Fields(scope)
	if len(scopes) == 0 {
		return nil
	}
	return scopes
}

// verificationKey is the jwt.Keyfunc. The parser has already checked the
// algorithm against the allowlist; the key is chosen by algorithm, so an HS256
// token is only ever checked with the HMAC secret and never with a public key.
func (v *Verifier) verificationKey(t *jwt.Token) (any, error) {
	// RFC 7515 section 4.1.11: extensions we do not understand must be refused.
	if _, ok := t.Header["crit"]; ok {
		return nil, errCriticalHeader
	}
	alg := t.Method.Alg()
	if alg == algHS256 {
		if _, ok := t.Method.(*jwt.SigningMethodHMAC); !ok || v.hmacSecret == nil {
			return nil, errAlgorithm
		}
		return v.hmacSecret, nil
	}
	set := v.keys[alg]
	if set == nil {
		return nil, errAlgorithm
	}
	rawKID, hasKID := t.Header["kid"]
	if !hasKID {
		return jwt.VerificationKeySet{Keys: set.all}, nil
	}
	kid, ok := rawKID.(string)
	if !ok {
		return nil, errUnknownKID
	}
	key, ok := set.byKID[kid]
	if !ok {
		return nil, errUnknownKID
	}
	return key, nil
}

// reason maps a parser error to a rejection. Structural problems come first,
// then the signature, then the claims, so a client is never told about claims
// of a token whose signature did not hold.
func (v *Verifier) reason(t *jwt.Token, claims *tokenClaims, err error) rejection {
	var r rejection
	switch {
	case errors.As(err, &r): // from verificationKey
		return r
	case errors.Is(err, jwt.ErrTokenMalformed):
		return errMalformed
	case t != nil && !v.algorithmAllowed(t.Header["alg"]):
		return errAlgorithm
	case errors.Is(err, jwt.ErrTokenSignatureInvalid), errors.Is(err, jwt.ErrTokenUnverifiable):
		return errSignature
	case errors.Is(err, jwt.ErrTokenExpired):
		return errExpired
	case errors.Is(err, jwt.ErrTokenNotValidYet):
		return errNotYetValid
	case errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		return errIssuedInFuture
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing) && claims.ExpiresAt == nil:
		return errMissingExp
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing) && len(claims.Audience) == 0:
		return errMissingAudience
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing) && claims.Issuer == "":
		return errMissingIssuer
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		return errAudience
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		return errIssuer
	default:
		return errTokenRejected
	}
}

func (v *Verifier) algorithmAllowed(alg any) bool {
	switch alg {
	case algHS256:
		return v.hmacSecret != nil
	case algRS256, algES256, algEdDSA:
		return v.keys[alg.(string)] != nil
	default:
		return false
	}
}

// IssueDevToken returns an HS256 token for subject with the given scopes,
// issued at now and valid for ttl. It is meant for local development and
// tests; production tokens come from an identity provider.
func IssueDevToken(secret []byte, subject string, scopes []string, ttl time.Duration, now time.Time) (string, error) {
	return IssueDevTokenActingFor(secret, subject, scopes, nil, ttl, now)
}

// IssueDevTokenActingFor is IssueDevToken with an act_for claim: the
// principals (bare subjects) the token may name as a task's requester.
func IssueDevTokenActingFor(secret []byte, subject string, scopes, actFor []string, ttl time.Duration, now time.Time) (string, error) {
	switch {
	case len(secret) < minHMACSecretLength:
		return "", fmt.Errorf("authz: HMAC secret must be at least %d bytes", minHMACSecretLength)
	case subject == "":
		return "", errors.New("authz: dev token needs a subject")
	case ttl <= 0:
		return "", errors.New("authz: dev token needs a positive ttl")
	}
	for _, s := range scopes {
		if s == "" || strings.ContainsFunc(s, unicode.IsSpace) {
			return "", fmt.Errorf("authz: scope %q is empty or has a space", s)
		}
	}
	var actForClaim json.RawMessage
	if len(actFor) > 0 {
		if slices.Contains(actFor, "") {
			return "", errors.New("authz: act_for holds an empty principal")
		}
		actForClaim, _ = json.Marshal(actFor) // strings: cannot fail
	}
	claims := tokenClaims{
		RegisteredClaims: jwt.RegisteredClaims{
			Subject:   subject,
			IssuedAt:  jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
		},
		Scope:  strings.Join(scopes, " "),
		ActFor: actForClaim,
	}
	token, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(secret)
	if err != nil {
		return "", fmt.Errorf("authz: sign dev token: %w", err)
	}
	return token, nil
}
