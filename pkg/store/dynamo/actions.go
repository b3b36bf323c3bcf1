package dynamo

import (
	"slices"
)

// methodOperations is the table of the DynamoDB operations each Store
// method may issue, on any path (happy, rejected, takeover, fallback):
// GetItem for classification and owner reads, PutItem and DeleteItem
// for the chunk items of turns too large for one item, for checkpoint
// deltas and for deleting a session (its items, its tombstone), Query for the two local secondary indexes, chunk and
// checkpoint reads, BatchGetItem for a resume's poll, and UpdateItem in
// the readers (GetSession, ListTurns, FindTurn, PollTurn) for deciding
// the fate of a turn whose lease expired (fate.go: conditional writes
// that succeed only on an expired lease).
// The IAM action lists below are derived from it, and a test proves with
// request-counting middleware that every operation a method issues is
// listed here.
var methodOperations = map[string][]string{
	"ClaimTurn":    {"UpdateItem", "GetItem", "Query"},
	"Checkpoint":   {"UpdateItem", "GetItem", "PutItem"},
	"PollTurn":     {"BatchGetItem", "Query", "GetItem", "UpdateItem"},
	"RenewLease":   {"UpdateItem"},
	"RequestStop":  {"UpdateItem", "GetItem"},
	"LoadContext":  {"Query"},
	"Supersede":    {"GetItem", "Query", "UpdateItem"},
	"SaveTurn":     {"UpdateItem", "GetItem", "PutItem", "DeleteItem"},
	"ReleaseTurn":  {"UpdateItem", "GetItem"},
	"GetSession":   {"GetItem", "Query", "UpdateItem"},
	"ListTurns":    {"Query", "GetItem", "UpdateItem"},
	"FindTurn":     {"Query", "GetItem", "UpdateItem"},
	"PutArtifacts": {"Query", "GetItem", "UpdateItem"},
	"GetArtifacts": {"Query", "GetItem"},
	"EnqueueTurn":  {"GetItem", "PutItem", "UpdateItem", "Query"},
	"ClaimQueued":  {"GetItem", "UpdateItem", "Query"},
	"CancelQueued": {"GetItem", "UpdateItem"},
	"QueuedTurns":  {"GetItem", "Query"},
	// The usage ledger (ledger.go): counting a turn, reading a
	// principal's ledger (two months' items in one BatchGetItem early in a
	// month), a tenant's page, and admissions.
	"RecordUsage":     {"UpdateItem", "GetItem"},
	"ReadUsage":       {"GetItem", "BatchGetItem"},
	"ListUsage":       {"Query"},
	"Admit":           {"GetItem", "BatchGetItem", "UpdateItem"},
	"CancelAdmission": {"UpdateItem", "GetItem"},
	// A principal's conversations (conversation.go, delete.go): the list,
	// a rename, feedback on a turn, and deleting (a crashed turn's
	// decision, the mark, the items, the tombstone) and erasing.
	"ListSessions":  {"Query"},
	"RenameSession": {"UpdateItem", "GetItem"},
	"SetFeedback":   {"Query", "GetItem", "UpdateItem"},
	"DeleteSession": {"GetItem", "UpdateItem", "Query", "DeleteItem", "PutItem"},
	"EraseSessions": {"GetItem", "UpdateItem", "Query", "DeleteItem", "PutItem"},
	// A submit's attachments: the record of their use (attachments.go).
	"UseAttachments": {"UpdateItem", "GetItem"},
	// Versions of an answer (branches.go): a select (an expired lease
	// decided first, the mark, the turns moved, the mark cleared) and a
	// fork (the source read, the turns copied with their chunks, the new
	// session's item).
	"SelectTurn":  {"GetItem", "Query", "UpdateItem"},
	"ForkSession": {"GetItem", "Query", "UpdateItem", "PutItem"},
}

// Store methods each Lambda function calls (docs/design.md#the-three-functions).
var (
	turnFunctionMethods = []string{"ClaimTurn", "RenewLease", "RequestStop", "LoadContext", "Supersede", "SaveTurn", "ReleaseTurn", "FindTurn", "Checkpoint", "PollTurn", "GetSession", "EnqueueTurn", "ClaimQueued", "CancelQueued",
		"RecordUsage", "ReadUsage", "ListUsage", "Admit", "CancelAdmission", "UseAttachments"}
	historyFunctionMethods = []string{"GetSession", "ListTurns", "FindTurn", "PollTurn", "QueuedTurns", "ReadUsage", "ListUsage",
		"ListSessions", "RenameSession", "SetFeedback", "DeleteSession", "EraseSessions", "SelectTurn", "ForkSession"}
	artifactsFunctionMethods = []string{"PutArtifacts", "GetArtifacts"}
)

// IAM actions ("dynamodb:<Operation>") each function's role needs on the
// table and its indexes, derived from methodOperations for the Store
// methods that function calls: the turn function (ClaimTurn RenewLease
// RequestStop LoadContext Supersede SaveTurn ReleaseTurn FindTurn
// Checkpoint PollTurn GetSession: the last three for durable turns and
// resume; the queue's; the usage ledger's and admissions), the history
// function (GetSession ListTurns FindTurn PollTurn QueuedTurns, and
// ReadUsage ListUsage for GET /usage; the conversations' ListSessions
// RenameSession SetFeedback DeleteSession EraseSessions; the versions'
// SelectTurn ForkSession) and the artifacts
// function (PutArtifacts GetArtifacts). Sorted, without duplicates. The
// SAM template grants exactly these.
var (
	TurnFunctionActions      = actionsFor(turnFunctionMethods)
	HistoryFunctionActions   = actionsFor(historyFunctionMethods)
	ArtifactsFunctionActions = actionsFor(artifactsFunctionMethods)
)

func actionsFor(methods []string) []string {
	var actions []string
	for _, m := range methods {
		ops, ok := methodOperations[m]
		if !ok {
			panic("dynamo: no operations listed for " + m)
		}
		for _, op := range ops {
			actions = append(actions, "dynamodb:"+op)
		}
	}
	slices.Sort(actions)
	return slices.Compact(actions)
}
