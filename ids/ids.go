// Package ids makes and reads the ids of sessions, tasks, hooks and input
// requests. A session, task or hook id names its partition, so any replica
// finds the record's Redis Cluster slot from the id alone. It imports
// nothing of this module: the store, the services and the tokens use it.
package ids

import (
	"crypto/rand"
	"errors"
	"hash/fnv"
	"strings"
)

// ID prefixes.
const (
	SessionPrefix = "ses_"
	TaskPrefix    = "task_"
	HookPrefix    = "hook_"
	requestPrefix = "req_"
)

// crockford is a lowercase base32 alphabet without look-alike letters.
const crockford = "0123456789abcdefghjkmnpqrstvwxyz"

// MaxPartitions bounds the partition count: two base32 characters of an id.
const MaxPartitions = 1024

// ErrBadID is an id that this deployment could not have made.
var ErrBadID = errors.New("malformed id")

// New returns prefix + two characters naming the partition + 26 characters
// (130 bits) of randomness. Any replica reads the partition back with
// PartitionOf.
func New(prefix string, partition int) string {
	var b strings.Builder
	b.Grow(len(prefix) + 28)
	b.WriteString(prefix)
	b.WriteByte(crockford[(partition>>5)&31])
	b.WriteByte(crockford[partition&31])
	b.WriteString(Random(26))
	return b.String()
}

// NewRequestID returns a random input request id (no partition in it).
func NewRequestID() string { return requestPrefix + Random(20) }

// Random returns n random characters of the ids' alphabet (5 bits each).
func Random(n int) string {
	buf := make([]byte, n)
	_, _ = rand.Read(buf) // crypto/rand.Read never fails on supported platforms
	for i := range buf {
		buf[i] = crockford[buf[i]&31]
	}
	return string(buf)
}

// PartitionOf reads the partition out of an id made by New.
func PartitionOf(id, prefix string, partitions int) (int, error) {
	if len(id) != len(prefix)+28 || !strings.HasPrefix(id, prefix) {
		return 0, ErrBadID
	}
	for _, c := range []byte(id[len(prefix):]) {
		if strings.IndexByte(crockford, c) < 0 {
			return 0, ErrBadID
		}
	}
	hi := strings.IndexByte(crockford, id[len(prefix)])
	lo := strings.IndexByte(crockford, id[len(prefix)+1])
	p := hi<<5 | lo
	if p >= partitions {
		return 0, ErrBadID
	}
	return p, nil
}

// PartitionFor spreads a string (such as an idempotency scope) over the partitions.
func PartitionFor(s string, partitions int) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(s))
	return int(h.Sum32() % uint32(partitions))
}
