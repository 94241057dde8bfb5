package keys

import (
	"strconv"
	"strings"
)

// Keys of the built-in test payment processors and of the webhooks.
//
// A test processor's checkout session id carries its registration id
// ("<kind>_<random>_<registrationId>"), so the session lives in its event's
// slot and the script that pays it can queue the webhook delivery on the
// same partition's due set in one atomic step.

// maxSessionPrefix bounds the "<kind>_<random>_" head of a session id.
const maxSessionPrefix = 48

// SessionRegistration returns the registration (order) id a test
// processor's session id carries; ok is false for anything else.
func SessionRegistration(sessionID string) (registrationID string, ok bool) {
	i := strings.IndexByte(sessionID, '_')
	if i <= 0 || i > 16 {
		return "", false
	}
	j := strings.IndexByte(sessionID[i+1:], '_')
	if j <= 0 || i+1+j > maxSessionPrefix {
		return "", false
	}
	for k := 0; k < i+1+j; k++ {
		c := sessionID[k]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return "", false
		}
	}
	reg := sessionID[i+1+j+1:]
	if _, ok := OrderEvent(reg); !ok {
		return "", false
	}
	return reg, true
}

// PaySession is the hash of one test processor checkout session, in its
// registration's event slot; ok is false when id is not a session id.
func (s Space) PaySession(sessionID string) (string, bool) {
	reg, ok := SessionRegistration(sessionID)
	if !ok {
		return "", false
	}
	ev, _ := OrderEvent(reg)
	return s.Prefix + Tag(Partition(ev)) + ":pay:" + sessionID, true
}

// PayDue is partition p's sorted set of a test processor's paid sessions
// whose webhook is still owed, scored by the time (ms) of the next
// delivery attempt. Each processor has its own, so one's delivery loop
// never leases the other's deliveries.
func (s Space) PayDue(p int, processor string) string {
	return s.Prefix + Tag(p) + ":paydue:" + processor
}

// WebhookSeen marks a processor's webhook event as received (replay
// protection). An event that pays a registration has its mark in the
// registration's slot, so the script that books the payment sets it in
// the same step (reg_pay); any other is spread over slots of its own.
func (s Space) WebhookSeen(processor, eventID, registrationID string) string {
	if ev, ok := OrderEvent(registrationID); ok {
		return s.Prefix + Tag(Partition(ev)) + ":whseen:" + processor + ":" + eventID
	}
	return s.Prefix + "{w" + strconv.Itoa(Partition(eventID)) + "}:whseen:" + processor + ":" + eventID
}
