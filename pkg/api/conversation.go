package api

// SessionList is the body of GET /sessions on the history function: one
// page of the caller's sessions, most recently active first
// (docs/conversations.md). NextCursor is null on the last page; with a
// search (q) a page may hold fewer sessions than its limit, none
// included, while NextCursor is set.
//
//	{"sessions":[SessionListItem...],"nextCursor":string|null}
type SessionList struct {
	Sessions   []SessionListItem `json:"sessions"`
	NextCursor *string           `json:"nextCursor"`
}

// SessionListItem is one session of a SessionList, and the body of a
// PATCH /sessions/{id} answer. Times are ISO 8601 UTC with milliseconds;
// UpdatedAt is when its last turn ended, or when its first turn started
// while that one runs (the list's order). A session is listed from its
// first turn's start; LastTurn is null until a turn of it ended.
//
//	{"sessionId","title":string|null,"createdAt","updatedAt":string|null,"lastTurn":ListedTurn|null}
type SessionListItem struct {
	SessionID string `json:"sessionId"`
	// Title is null until the session's first turn ended with a user
	// message to derive it from (cut at a word boundary, at most 60
	// characters) and no one named it.
	Title     *string `json:"title"`
	CreatedAt string  `json:"createdAt"`
	// UpdatedAt is null only for a session whose first turn started
	// before sessions were listed from their start.
	UpdatedAt *string     `json:"updatedAt"`
	LastTurn  *ListedTurn `json:"lastTurn"`
}

// ListedTurn is the last turn of a listed session: how it ended and the
// start of its answer as plain text (at most 60 characters, "" when it
// has none).
//
//	{"status":"complete"|"interrupted"|"error","preview"}
type ListedTurn struct {
	Status  string `json:"status" ts:"\"complete\" | \"interrupted\" | \"error\""`
	Preview string `json:"preview"`
}

// RenameRequest is the body of PATCH /sessions/{id}: the session's new
// title, 1 to 120 characters after trimming spaces, without control,
// format or other invisible characters (400 REQUEST_INVALID_BODY
// otherwise).
//
//	{"title"}
type RenameRequest struct {
	Title string `json:"title"`
}

// Feedback is the owner's rating of a turn's answer: the body of PUT
// /sessions/{id}/turns/{turnId}/feedback (rating and comment) and its
// answer, a turn's "feedback" on /turns (null when none), and its
// assistant message's metadata.feedback on /messages. Comment is at most
// 1,000 characters (line breaks and tabs kept, no other control or
// invisible character); CreatedAt is set by the server.
//
//	{"rating":"up"|"down","comment"?,"createdAt"?}
type Feedback struct {
	Rating    string `json:"rating" ts:"\"up\" | \"down\""`
	Comment   string `json:"comment,omitempty"`
	CreatedAt string `json:"createdAt,omitempty"`
}

// DeleteProgress is the body of a 202 answer to DELETE /sessions/{id}
// and of DELETE /principals/{subject}/sessions (docs/conversations.md).
// Status "deleting" means more remains: send the same request again
// (each call resumes where the last stopped); "deleted" that nothing is
// left. Deleted and Busy count sessions in an erase's answer (Busy: those
// left alone because a turn of theirs is running); both are 0 in a
// session delete's.
//
//	{"status":"deleting"|"deleted","deleted":n,"busy":n}
type DeleteProgress struct {
	Status  string `json:"status" ts:"\"deleting\" | \"deleted\""`
	Deleted int    `json:"deleted"`
	Busy    int    `json:"busy"`
}

// The statuses of DeleteProgress.
const (
	DeleteStatusDeleting = "deleting"
	DeleteStatusDeleted  = "deleted"
)
