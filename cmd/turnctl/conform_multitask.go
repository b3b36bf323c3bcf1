package main

// The multitask checks of `turnctl conform` (docs/multitask.md): one per
// policy the capabilities list in multitask.policies.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"

	"github.com/turnstream/turnstream/pkg/api"
	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// Inputs of the turns the multitask checks send while a long turn runs.
const (
	enqueueInput   = "Queued behind a running turn: reply with one short sentence."
	interruptInput = "Sent to interrupt a running turn: reply with one short sentence."
)

// multitaskChecks are the conformance checks of the multitask policies
// (reject, enqueue, interrupt, rollback), run while a long turn holds its
// session.
type multitaskChecks struct{ *conformer }

// checkMultitask runs multitask.reject, .enqueue, .interrupt and
// .rollback, each when capabilities.multitask.policies lists its policy
// and skipped with the reason otherwise.
func (c multitaskChecks) checkMultitask(ctx context.Context) {
	var policies []string
	if c.caps != nil {
		policies = c.caps.Multitask.Policies
	}
	for _, p := range api.MultitaskPolicies {
		name := "multitask." + p
		if !slices.Contains(policies, p) {
			c.record(name, checkSkip, "not advertised by /capabilities (multitask.policies)")
			continue
		}
		switch p {
		case api.MultitaskReject:
			c.checkMultitaskReject(ctx, name)
		case api.MultitaskEnqueue:
			c.checkMultitaskEnqueue(ctx, name)
		default:
			c.checkMultitaskInterrupt(ctx, name, p)
		}
	}
}

// whileRunning submits a long turn to a new session and calls during
// once, from its first line that is not terminal (the turn runs). It
// returns the long turn and whether during was called.
func (c multitaskChecks) whileRunning(ctx context.Context, during func(sessionID string)) (*submitted, bool) {
	sessionID := newSessionID()
	called := false
	long := c.submit(ctx, sessionID, longInput, func(_ int, ev *protocol.Event) {
		if called || ev == nil || isTerminalEvent(ev) {
			return
		}
		called = true
		during(sessionID)
	})
	return long, called
}

// checkMultitaskReject: a submit with X-Turnstream-Multitask: reject while
// a turn runs is 409 SESSION_BUSY in the diagnostic shape; the running
// turn's stream still ends with its terminal line.
func (c multitaskChecks) checkMultitaskReject(ctx context.Context, name string) {
	var status int
	var header http.Header
	var body []byte
	var err error
	long, sent := c.whileRunning(ctx, func(sessionID string) {
		status, header, body, err = c.do(ctx, http.MethodPost, c.opts.turnURL, submitBody(sessionID, "turn-"+randomHex(8), shortInput),
			"application/json", http.Header{api.MultitaskHeader: {api.MultitaskReject}})
	})
	if c.skipUnlessRunning(name, long, sent) {
		return
	}
	var p problems
	switch {
	case err != nil:
		p.addf("the second submit: %v", err)
	case status != http.StatusConflict:
		p.addf("a submit with reject while a turn runs answered %d %s, want 409 SESSION_BUSY", status, errorCode(body))
	default:
		p = append(p, errorBodyProblems(header, body, []string{protocol.CodeSessionBusy})...)
	}
	p = append(p, examineStream(long).terminal...)
	c.report(name, p, "409 SESSION_BUSY while the first turn streamed")
}

// skipUnlessRunning records name as failed when the long turn was
// refused, or skipped when it ended in its first line (nothing ran
// meanwhile), and reports whether it did.
func (c multitaskChecks) skipUnlessRunning(name string, long *submitted, sent bool) bool {
	switch {
	case long.status != http.StatusOK:
		c.record(name, checkFail, "the long turn answered %d %s", long.status, errorCode(long.errBody))
	case !sent:
		c.record(name, checkSkip, "the long turn ended in its first line; nothing ran meanwhile")
	default:
		return false
	}
	return true
}

// checkMultitaskEnqueue: enqueue while a turn runs answers 202 with the
// queued turn (checked by the client: this session and turn, position >=
// 1, a stream URL below the turn URL); the running turn ends as usual;
// the queued turn then runs without another submit, followed over its
// stream URL to a complete snapshot carrying its input; history lists
// the running turn, then the queued one.
func (c multitaskChecks) checkMultitaskEnqueue(ctx context.Context, name string) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.timeout)
	defer cancel()
	var queued *client.Stream
	var qerr error
	var turnID string
	long, sent := c.whileRunning(ctx, func(sessionID string) {
		sub := newSubmit(sessionID, enqueueInput)
		sub.Multitask, turnID = api.MultitaskEnqueue, sub.TurnID
		queued, qerr = c.api.Submit(ctx, sub)
	})
	if c.skipUnlessRunning(name, long, sent) {
		return
	}
	var p problems
	p = append(p, examineStream(long).terminal...)
	switch {
	case qerr != nil:
		c.report(name, append(p, "enqueue while a turn runs: "+errorText(qerr)), "")
		return
	case queued.Queued() == nil:
		_ = queued.Close()
		c.report(name, append(p, "enqueue while a turn runs answered 200: the turn ran at once"), "")
		return
	}
	defer func() { _ = queued.Close() }()
	position := queued.Queued().Position
	var last *protocol.Event
	for {
		ev, err := queued.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			p.addf("following the queued turn's streamUrl: %s", errorText(err))
			break
		}
		last = ev
	}
	switch {
	case last == nil:
		p.addf("the queued turn's stream had no snapshot")
	case last.Snapshot.Status != protocol.StatusComplete:
		p.addf("the queued turn ended %s", last.Snapshot.Status)
	case !hasUserInput(last.Snapshot.Messages, enqueueInput):
		p.addf("the queued turn's last snapshot lacks its input")
	}
	if len(p) == 0 {
		ids, err := c.turnIDs(ctx, long.sessionID)
		switch {
		case err != nil:
			p.addf("history: %s", errorText(err))
		case slices.Index(ids, long.turnID) < 0 || slices.Index(ids, turnID) <= slices.Index(ids, long.turnID):
			p.addf("history lists %v, want the running turn, then the queued one", short(ids))
		}
	}
	c.report(name, p, fmt.Sprintf("202 queued (position %d); it ran after the running turn, complete, followed over its streamUrl", position))
}

// checkMultitaskInterrupt: interrupt (or rollback) while a turn runs
// answers the new turn's own 200 stream, ending complete, and the running
// turn's stream ends error TURN_INTERRUPTED; with rollback the stopped
// turn is then gone from history (and from the new turn's snapshots),
// with interrupt it stays, interrupted. A running turn that ended before
// the interrupt reached it is a pass that says so.
func (c multitaskChecks) checkMultitaskInterrupt(ctx context.Context, name, policy string) {
	var second *submitted
	done := make(chan struct{})
	long, sent := c.whileRunning(ctx, func(sessionID string) {
		sub := newSubmit(sessionID, interruptInput)
		sub.Multitask = policy
		second = &submitted{sessionID: sessionID, turnID: sub.TurnID, sub: sub}
		go func() { // it waits for the running turn to end, which this stream shows
			defer close(done)
			c.stream(ctx, second, nil)
		}()
	})
	if !sent {
		close(done)
	}
	<-done
	if c.skipUnlessRunning(name, long, sent) {
		return
	}
	var p problems
	p = append(p, examineStream(long).terminal...)
	if second.status != http.StatusOK {
		c.report(name, append(p, fmt.Sprintf("a submit with %s while a turn runs answered %d %s, want its stream", policy, second.status, errorCode(second.errBody))), "")
		return
	}
	// Its lines' decoding, identity and sequences are the stream.* checks'
	// business; this one needs its terminal line.
	p = append(p, examineStream(second).terminal...)
	if last := second.last(); last == nil || last.Kind != protocol.EventSnapshot || last.Snapshot.Status != protocol.StatusComplete {
		p.addf("the new turn did not end complete")
	}
	interrupted := false
	switch last := long.last(); {
	case last == nil || last.Kind != protocol.EventSnapshot:
	case last.Snapshot.Status == protocol.StatusError && last.Snapshot.Error != nil && last.Snapshot.Error.Code == protocol.CodeTurnInterrupted:
		interrupted = true
	case last.Snapshot.Status != protocol.StatusComplete:
		p.addf("the running turn ended %s, want error TURN_INTERRUPTED", last.Snapshot.Status)
	}
	if len(p) == 0 {
		ids, err := c.turnIDs(ctx, long.sessionID)
		gone := slices.Index(ids, long.turnID) < 0
		switch {
		case err != nil:
			p.addf("history: %s", errorText(err))
		case slices.Index(ids, second.turnID) < 0:
			p.addf("history lists %v without the new turn", short(ids))
		case policy == api.MultitaskRollback && interrupted && !gone:
			p.addf("history still lists the rolled-back turn")
		case policy == api.MultitaskInterrupt && gone:
			p.addf("history no longer lists the interrupted turn (only rollback removes it)")
		}
		if policy == api.MultitaskRollback && interrupted && carriesTurn(second.last().Snapshot.Messages, long) {
			p.addf("the new turn's snapshot still carries the rolled-back turn's messages")
		}
	}
	detail := "the running turn ended TURN_INTERRUPTED, the new one streamed to complete"
	if policy == api.MultitaskRollback {
		detail += "; the stopped turn is gone from history"
	}
	if !interrupted {
		detail = "accepted; the running turn had ended before it could be interrupted, the new one streamed to complete"
	}
	c.report(name, p, detail)
}

// turnIDs lists a session's turn ids in history, oldest first.
func (c multitaskChecks) turnIDs(ctx context.Context, sessionID string) ([]string, error) {
	var ids []string
	pages := 0
	for pg, err := range c.api.TurnPages(ctx, sessionID, client.PageOptions{Limit: client.MaxPageLimit, Order: client.OrderAsc}) {
		if err != nil {
			return nil, err
		}
		if pages++; pages > 100 {
			return nil, errors.New("more than 100 pages")
		}
		for _, t := range pg.Turns {
			ids = append(ids, t.TurnID)
		}
	}
	return ids, nil
}

// hasUserInput reports whether msgs hold a user message of input.
func hasUserInput(msgs []protocol.Message, input string) bool {
	return slices.ContainsFunc(msgs, func(m protocol.Message) bool { return m.Role == protocol.RoleUser && m.Content == input })
}

// carriesTurn reports whether msgs hold a message of turn t, as t's own
// stream named its messages.
func carriesTurn(msgs []protocol.Message, t *submitted) bool {
	ids := map[string]bool{}
	for _, ev := range t.events {
		if ev != nil && ev.Kind == protocol.EventSnapshot {
			for _, m := range ev.Snapshot.Messages {
				if hasUserInput([]protocol.Message{m}, longInput) || m.Role == protocol.RoleAssistant {
					ids[m.ID] = true
				}
			}
		}
	}
	return slices.ContainsFunc(msgs, func(m protocol.Message) bool { return ids[m.ID] })
}
