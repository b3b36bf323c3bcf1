package api

// Siblings is a turn's sibling group on the wire (docs/branches.md): the
// turns answered at its place of the conversation, in the order they
// were created, and the turn's own position among them. It is a turn's
// "siblings" on /turns and /turns/{turnId}, and its assistant message's
// metadata.siblings on /messages; absent on a turn without siblings.
//
//	{"index","count","turnIds":[string...]}
type Siblings struct {
	// Index is the turn's position in TurnIDs, from 0.
	Index int `json:"index"`
	// Count is len(TurnIDs): 2 to 100.
	Count   int      `json:"count"`
	TurnIDs []string `json:"turnIds"`
}

// ForkRequest is the body of POST /sessions/{id}/fork: the turn of the
// session's active branch the new session's history ends with, and
// optionally the new session's id (a SafeId; the server makes one when it
// is absent) and title (1 to 120 characters; "Fork of <the source's
// title>" when absent). The answer is 201 with the new session's
// SessionListItem.
//
//	{"atTurnId","sessionId"?,"title"?}
type ForkRequest struct {
	AtTurnID  string `json:"atTurnId"`
	SessionID string `json:"sessionId,omitempty"`
	Title     string `json:"title,omitempty"`
}
