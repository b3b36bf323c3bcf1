package memory

import (
	"slices"
	"time"

	"github.com/turnstream/turnstream/pkg/chat"
)

// checkDecision returns the rejection of a decision claim req that cannot
// claim its confirmation in sess at now (chat.CheckDecision); nil for a
// claim that decides nothing. The caller holds the mutex.
func checkDecision(sess *chat.Session, req chat.ClaimRequest, now time.Time) error {
	if req.Decision == nil {
		return nil
	}
	return chat.CheckDecision(sess.Confirmations, req.Decision, now)
}

// decide moves the confirmation of req.Decision (checked by checkDecision)
// to its claimed status, decided by req.TurnID.
func decide(sess *chat.Session, req chat.ClaimRequest) {
	if req.Decision == nil {
		return
	}
	if i := chat.FindConfirmation(sess.Confirmations, req.Decision.Token); i >= 0 {
		sess.Confirmations[i].Status = req.Decision.Claimed()
		sess.Confirmations[i].DecidedBy = req.TurnID
	}
}

// settle writes the confirmations of release req (chat.ReleaseConfirmations,
// from the claim's copy) to sess, stamping the new ones with now.
func settle(sess *chat.Session, req chat.ReleaseRequest, now time.Time) {
	add := slices.Clone(req.Confirmations)
	for i := range add {
		add[i].CreatedAt = now
		add[i].Input = slices.Clone(add[i].Input)
	}
	if confs, changed := chat.ReleaseConfirmations(req.Claim.Session.Confirmations, req.Claim.Lease.TurnID, add, req.Undecide); changed {
		sess.Confirmations = confs
	}
}

// cloneConfirmations is a deep copy of confs.
func cloneConfirmations(confs []chat.Confirmation) []chat.Confirmation {
	out := slices.Clone(confs)
	for i := range out {
		out[i].Input = slices.Clone(out[i].Input)
	}
	return out
}
