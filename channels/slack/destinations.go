package slack

import (
	"errors"
	"slices"
	"strings"
)

// Channels says which principals may have the bot post into which channel:
// channel → principals.
type Channels map[string][]string

// maxChannelNameLen is Slack's longest channel name.
const maxChannelNameLen = 80

// ParseChannels reads TASKHOOK_SLACK_CHANNELS: "C012=alice|bob,C034=carol",
// a comma-separated list of channel = the principals allowed to post there,
// separated by |, spaces around any of them allowed. A channel is written as
// endpoints name it: an id (C012AB, A-Z and 0-9) or #name. A principal is
// written as tasks record it ("iss#sub" when the server has an issuer). An
// empty list opens no channel. A malformed entry or a channel given twice is
// an error, naming the entry by position only.
func ParseChannels(s string) (Channels, error) {
	return parseEntries(s, func(channel, list string) ([]string, error) {
		if !validListedChannel(channel) || list == "" {
			return nil, errors.New("want CHANNEL=principal|principal..., a channel id of A-Z and 0-9 or #name")
		}
		var principals []string
		for _, p := range strings.Split(list, "|") {
			if p = strings.TrimSpace(p); p == "" {
				return nil, errors.New("an empty principal (want CHANNEL=principal|principal...)")
			}
			if !slices.Contains(principals, p) {
				principals = append(principals, p)
			}
		}
		return principals, nil
	})
}

// validListedChannel takes a channel id (C012AB: A-Z and 0-9) or #name.
func validListedChannel(c string) bool {
	name, isName := strings.CutPrefix(c, "#")
	if !isName {
		return len(c) >= 2 && len(c) <= maxUserIDLen && c[0] >= 'A' && c[0] <= 'Z' && upperAlnum(c)
	}
	if name == "" || len(name) > maxChannelNameLen {
		return false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

// Destinations is where the bot may post for whom: the channels
// TASKHOOK_SLACK_CHANNELS opens to principals, and the direct messages of
// the Slack users TASKHOOK_SLACK_USERS maps, each to its own principal.
type Destinations struct {
	Channels Channels
	Users    Users
}

// Allows reports whether principal may register channel as a notification
// destination of something whose requester is requester: a channel the list
// opens to principal, or the Slack user mapped to requester (a direct
// message from the bot). Nothing else: the bot is a member of channels its
// callers are not, and a message there would be posted in its name.
func (d Destinations) Allows(channel, principal, requester string) bool {
	if slices.Contains(d.Channels[channel], principal) {
		return true
	}
	who, ok := d.Users.Principal(channel)
	return ok && requester != "" && who == requester
}
