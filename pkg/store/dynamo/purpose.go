package dynamo

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// Purpose names what the store sends a DynamoDB call for. The store
// labels every call where it makes it: a write with the step it is (a
// claim, a checkpoint's delta, a ledger count's settle...), a read with
// the step it serves (the store method's, or the write it resolves). The
// call's context carries the label (PurposeOf reads it, in the SDK's
// middleware for instance), and a client of a local endpoint sends it as
// the PurposeHeader request header, so meters, classifiers and fault
// rules read what a call is for instead of parsing its expressions.
type Purpose string

// The purposes of writes, one per kind of write the store makes.
const (
	// PurposeClaim is a claim's write of the session item (ClaimTurn, and
	// the resend that resolves it).
	PurposeClaim Purpose = "claim"
	// PurposeTakeover is a takeover's compare-and-set of the session item
	// that claims it (a lease that expired while its turn ran).
	PurposeTakeover Purpose = "takeover"
	// PurposeTakeoverRecord is a takeover's compare-and-set that records
	// the crashed turn and claims nothing (the turn id was rejected).
	PurposeTakeoverRecord Purpose = "takeover-record"
	// PurposeGiveBack undoes a claim that must not run: the lease and the
	// ordinal return.
	PurposeGiveBack Purpose = "give-back"
	// PurposeDequeue claims a queued turn (ClaimQueued).
	PurposeDequeue Purpose = "dequeue"
	// PurposeRenew renews a lease.
	PurposeRenew Purpose = "renew"
	// PurposeAbandon marks a lease abandoned (AbandonLease).
	PurposeAbandon Purpose = "abandon"
	// PurposeWithdraw withdraws a claim: the turn item voided and the
	// session freed (WithdrawClaim).
	PurposeWithdraw Purpose = "withdraw"
	// PurposeAck is a checkpoint's write of the running turn item: the
	// first one is the turn's acknowledgment.
	PurposeAck Purpose = "ack"
	// PurposeCheckpoint is a checkpoint's reads (Checkpoint); its writes
	// are PurposeAck, PurposeDelta and PurposeLive.
	PurposeCheckpoint Purpose = "checkpoint"
	// PurposeDelta is a checkpoint's delta item.
	PurposeDelta Purpose = "delta"
	// PurposeLive is a checkpoint's (or a heartbeat's) write of the live
	// item.
	PurposeLive Purpose = "live"
	// PurposeStop records a stop request: the session's flag and the live
	// item's.
	PurposeStop Purpose = "stop"
	// PurposeSave is the turn's save: its turn item, the chunks of a large
	// one, and the removal of chunks a failed save left.
	PurposeSave Purpose = "save"
	// PurposeRelease releases the lease (ReleaseTurn, and its resend).
	PurposeRelease Purpose = "release"
	// PurposeFence is a decider's fence of a turn whose lease expired: of
	// the session, the live item, the turn item it closes as lost.
	PurposeFence Purpose = "fence"
	// PurposeFenceRecord is a decider's fence record of a turn that
	// saved nothing (it has no turn item to close).
	PurposeFenceRecord Purpose = "fence-record"
	// PurposeFree is a decision's last write: the decided session freed.
	PurposeFree Purpose = "free"
	// PurposeSupersede marks turns superseded (Supersede).
	PurposeSupersede Purpose = "supersede"
	// PurposeSelect switches the active branch (SelectTurn): the
	// session's select mark, the turns that leave and those that come
	// back, the mark cleared.
	PurposeSelect Purpose = "select"
	// PurposeFork writes a forked session (ForkSession): its turns, then
	// its session item.
	PurposeFork Purpose = "fork"
	// PurposeArtifacts records a turn's artifact references.
	PurposeArtifacts Purpose = "artifacts"
	// PurposeEnqueue queues a turn: its queue item and the session's
	// entry (EnqueueTurn).
	PurposeEnqueue Purpose = "enqueue"
	// PurposeNotRun records a queued turn that cannot run: in the
	// session, then as its turn item.
	PurposeNotRun Purpose = "not-run"
	// PurposeQueueRemove removes the queue entry of a turn recorded as not
	// run.
	PurposeQueueRemove Purpose = "queue-remove"
	// PurposeCancel cancels a queued turn (CancelQueued).
	PurposeCancel Purpose = "cancel"
	// PurposeLedgerAdd is a ledger count's add, the one write of a count
	// that changes the counters.
	PurposeLedgerAdd Purpose = "ledger-add"
	// PurposeLedgerSettle is a ledger count's settle of the session's
	// counted ordinal.
	PurposeLedgerSettle Purpose = "ledger-settle"
	// PurposeLedgerClear is a ledger count's clear of its journal entry.
	PurposeLedgerClear Purpose = "ledger-clear"
	// PurposeRename sets a session's title (RenameSession).
	PurposeRename Purpose = "rename"
	// PurposeFeedback sets or removes a turn's feedback (SetFeedback).
	PurposeFeedback Purpose = "feedback"
	// PurposeDelete is a session deletion's writes (DeleteSession): the
	// mark on the session item, the deletes of its items, and the
	// session item's own delete.
	PurposeDelete Purpose = "delete"
	// PurposeAdmission records an admission (rate and concurrency
	// quotas).
	PurposeAdmission Purpose = "admission"
	// PurposeAdmissionCancel forgets an admission given back: its rate
	// place, then its entry.
	PurposeAdmissionCancel Purpose = "admission-cancel"
	// PurposeAttachment records (or takes back) a turn's use of an
	// attachment (UseAttachments).
	PurposeAttachment Purpose = "attachment"
)

// The purposes of reads that are not part of a write's step.
const (
	// PurposeContext is the context load of a turn (LoadContext).
	PurposeContext Purpose = "context"
	// PurposeLookup is a claim's look-up of its turn id among the stored
	// turns (a Query of TurnIDIndex, when the terminal window is full).
	PurposeLookup Purpose = "lookup"
	// PurposePoll is a resume's read of a running turn (PollTurn).
	PurposePoll Purpose = "poll"
	// PurposeLedgerRead reads usage ledger items (ReadUsage, ListUsage,
	// and a count's first read).
	PurposeLedgerRead Purpose = "ledger-read"
	// PurposeRead is a read for a caller: a session, history pages, a
	// turn, its artifacts, the queue.
	PurposeRead Purpose = "read"
)

// PurposeHeader is the request header a client of a local endpoint
// (ClientOptions.Endpoint) sends each call's Purpose in, for the proxies
// and fault injectors in front of a local DynamoDB API server. Requests to
// AWS's endpoints do not carry it.
const PurposeHeader = "X-Turnstream-Store-Purpose"

type purposeKey struct{}

// withPurpose returns ctx labelled with p: the calls made under it carry
// p until a step under it labels its own.
func withPurpose(ctx context.Context, p Purpose) context.Context {
	return context.WithValue(ctx, purposeKey{}, p)
}

// PurposeOf returns the purpose ctx is labelled with ("" when none): in
// the SDK's middleware of a call the store makes, that call's.
func PurposeOf(ctx context.Context) Purpose {
	p, _ := ctx.Value(purposeKey{}).(Purpose)
	return p
}

// sendPurpose is the client option that sends each call's purpose as
// PurposeHeader.
func sendPurpose(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
		return stack.Build.Add(middleware.BuildMiddlewareFunc("turnstreamPurpose",
			func(ctx context.Context, in middleware.BuildInput, next middleware.BuildHandler) (middleware.BuildOutput, middleware.Metadata, error) {
				if req, ok := in.Request.(*smithyhttp.Request); ok {
					if p := PurposeOf(ctx); p != "" {
						req.Header.Set(PurposeHeader, string(p))
					}
				}
				return next.HandleBuild(ctx, in)
			}), middleware.After)
	})
}
