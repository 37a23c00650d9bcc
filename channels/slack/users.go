package slack

import "errors"

// Users maps Slack user ids to the principals they act as.
type Users map[string]string

// maxUserIDLen bounds a Slack user id in the map: real ones are about 11.
const maxUserIDLen = 32

// ParseUsers reads TASKHOOK_SLACK_USERS: "U012AB=alice,U034CD=bob", a
// comma-separated list of Slack user id = principal, spaces around either
// allowed. A principal is written as tasks record it ("iss#sub" when the
// server has an issuer). An empty list maps nobody. A malformed entry or a
// Slack id given twice is an error, naming the entry by position only.
func ParseUsers(s string) (Users, error) {
	return parseEntries(s, func(id, principal string) (string, error) {
		if !validUserID(id) || principal == "" {
			return "", errors.New("want SLACK_USER_ID=principal, a Slack id of A-Z and 0-9 starting with U or W")
		}
		return principal, nil
	})
}

// Principal is who a Slack user acts as; false when unmapped.
func (u Users) Principal(slackUserID string) (string, bool) {
	p, ok := u[slackUserID]
	return p, ok
}

func validUserID(id string) bool {
	return len(id) >= 2 && len(id) <= maxUserIDLen && (id[0] == 'U' || id[0] == 'W') && upperAlnum(id)
}

// upperAlnum reports whether s is all A-Z and 0-9, as Slack's ids are.
func upperAlnum(s string) bool {
	for i := range len(s) {
		if (s[i] < 'A' || s[i] > 'Z') && (s[i] < '0' || s[i] > '9') {
			return false
		}
	}
	return true
}
