package callbacks

import (
	"net/url"
	"strings"

	"github.com/taskhook/taskhook/api/wire"
	"github.com/taskhook/taskhook/store"
)

// The shares a delivery takes, as the metrics name them.
const (
	shareEndpoint = "endpoint"
	shareOwner    = "owner"
	shareHost     = "host"
)

// job is one outbox entry on its way: the entry, where it goes, and whose
// shares it takes.
type job struct {
	p      int
	entry  store.OutboxEntry
	target store.Target
	ep     wire.Endpoint
	active bool   // the endpoint is in its record and active
	owner  string // the principal owning the record that holds the endpoint
	host   string // the destination host: the URL's, or Slack's API for a Slack endpoint
	size   int    // what the job keeps in memory while it waits, roughly
}

// jobOverhead is what a waiting job costs beyond its event and its
// endpoint's record: the parsed endpoint, ids, map entries.
const jobOverhead = 512

// hostOf is the host deliveries to a URL go to, as one name for every port
// and case: a receiver that hangs on one port hangs on the others.
func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
}

// shareLimits are the most deliveries one endpoint, one owner and one host
// may have under way at once, and the room, in bytes, for jobs waiting for
// their shares.
type shareLimits struct {
	endpoint, owner, host int
	waitBytes             int
}

// shares decides which deliveries start: a job starts while its endpoint,
// its owner and its host each have fewer deliveries under way than their
// limit (one, for a Slack endpoint: its updates of a message go in order).
// A job that does not fit waits in a queue of its endpoint, which keeps the
// endpoint's jobs in order, and starts when its shares have room again; the
// queues take turns. The waiting room is bounded in bytes, and an owner or a
// host fills a quarter of it at most, so that one tenant's backlog leaves
// room for the others'. It holds no lock and starts nothing itself: the
// dispatcher calls it under its own lock.
type shares struct {
	limits shareLimits

	endpoints, owners, hosts map[string]int // deliveries under way

	queues   map[string][]*job // waiting jobs, by endpoint id, oldest first
	turns    []string          // the endpoint ids with waiting jobs, in turn order
	turn     int               // the index in turns of the queue looked at first
	waiting  int               // jobs waiting
	bytes    int               // their size
	byOwner  map[string]int    // their size by owner
	byHost   map[string]int    // their size by host
	quarters int               // the most bytes one owner's or one host's waiting jobs may hold
}

func newShares(l shareLimits) *shares {
	return &shares{
		limits:    l,
		endpoints: map[string]int{}, owners: map[string]int{}, hosts: map[string]int{},
		queues: map[string][]*job{}, byOwner: map[string]int{}, byHost: map[string]int{},
		quarters: l.waitBytes / 4,
	}
}

// full names the first of j's shares that has no room, "" when it may
// start.
func (s *shares) full(j *job) string {
	limit := s.limits.endpoint
	if j.ep.Slack != nil {
		limit = 1
	}
	switch {
	case s.endpoints[j.entry.EndpointID] >= limit:
		return shareEndpoint
	case s.owners[j.owner] >= s.limits.owner:
		return shareOwner
	case s.hosts[j.host] >= s.limits.host:
		return shareHost
	}
	return ""
}

func (s *shares) take(j *job) {
	s.endpoints[j.entry.EndpointID]++
	s.owners[j.owner]++
	s.hosts[j.host]++
}

// place decides about a job just read: it starts (its shares are taken),
// or it waits, or neither (the waiting room has no place for it: the
// dispatcher puts it back in the outbox for later). full names the share
// that kept it from starting at once ("endpoint" too when it queues behind
// its endpoint's waiting jobs).
func (s *shares) place(j *job) (start, wait bool, full string) {
	if len(s.queues[j.entry.EndpointID]) > 0 {
		full = shareEndpoint
	} else if full = s.full(j); full == "" {
		s.take(j)
		return true, false, ""
	}
	if s.bytes+j.size > s.limits.waitBytes || s.byOwner[j.owner]+j.size > s.quarters || s.byHost[j.host]+j.size > s.quarters {
		return false, false, full
	}
	id := j.entry.EndpointID
	if len(s.queues[id]) == 0 {
		s.turns = append(s.turns, id)
	}
	s.queues[id] = append(s.queues[id], j)
	s.waiting++
	s.bytes += j.size
	s.byOwner[j.owner] += j.size
	s.byHost[j.host] += j.size
	return false, true, full
}

// next takes the first waiting job, looking at the queues in turn from the
// one after the last that started, whose shares now have room: its shares
// are taken. nil when none has room.
func (s *shares) next() *job {
	for k := range s.turns {
		i := (s.turn + k) % len(s.turns)
		id := s.turns[i]
		q := s.queues[id]
		if s.full(q[0]) != "" {
			continue
		}
		j := q[0]
		q[0] = nil
		if q = q[1:]; len(q) == 0 {
			delete(s.queues, id)
			s.turns = append(s.turns[:i], s.turns[i+1:]...)
			s.turn = i // the queue after this one has moved into its place
		} else {
			s.queues[id] = q
			s.turn = i + 1
		}
		if len(s.turns) > 0 {
			s.turn %= len(s.turns)
		} else {
			s.turn = 0
		}
		s.unwait(j)
		s.take(j)
		return j
	}
	return nil
}

func (s *shares) unwait(j *job) {
	s.waiting--
	s.bytes -= j.size
	drop(s.byOwner, j.owner, j.size)
	drop(s.byHost, j.host, j.size)
}

// done gives back the shares of a job that has ended.
func (s *shares) done(j *job) {
	drop(s.endpoints, j.entry.EndpointID, 1)
	drop(s.owners, j.owner, 1)
	drop(s.hosts, j.host, 1)
}

// clear empties the waiting room and returns the jobs it held.
func (s *shares) clear() []*job {
	var out []*job
	for _, id := range s.turns {
		for _, j := range s.queues[id] {
			s.unwait(j)
			out = append(out, j)
		}
		delete(s.queues, id)
	}
	s.turns, s.turn = nil, 0
	return out
}

// drop takes n from m[k], deleting the key at zero: the maps hold only
// what is in use, however many owners and hosts come and go.
func drop(m map[string]int, k string, n int) {
	if m[k] -= n; m[k] <= 0 {
		delete(m, k)
	}
}
