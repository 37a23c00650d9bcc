// Package ids makes and reads the ids of sessions, tasks, hooks and input
// requests, and reads the ids of logged events. A session, task or hook id
// names its partition, so any replica finds the record's Redis Cluster slot
// from the id alone. It imports nothing of this module: the store, the
// services, the faces and the tokens use it.
package ids

import (
	"crypto/rand"
	"errors"
	"hash/fnv"
	"strconv"
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

// An event id is the id Redis gave the event in its log, a stream id: the
// milliseconds of its append, "-" and a sequence number ("1733000000000-0").
// A reader's cursor may name the milliseconds alone, meaning every event of
// that millisecond.

// ValidEventID reports whether id reads as an event id (ms or ms-seq).
func ValidEventID(id string) bool {
	_, err := NextEventID(id)
	return err == nil
}

// NextEventID is the smallest event id after id; ErrBadID when id does not
// read as one.
func NextEventID(id string) (string, error) {
	msPart, seqPart, ok := strings.Cut(id, "-")
	if !ok {
		seqPart = "0"
		msPart = id
	}
	msv, err1 := strconv.ParseUint(msPart, 10, 64)
	seq, err2 := strconv.ParseUint(seqPart, 10, 64)
	if err1 != nil || err2 != nil {
		return "", ErrBadID
	}
	if !ok {
		return strconv.FormatUint(msv+1, 10) + "-0", nil
	}
	return strconv.FormatUint(msv, 10) + "-" + strconv.FormatUint(seq+1, 10), nil
}
