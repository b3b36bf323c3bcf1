package engine

import (
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/turnstream/turnstream/pkg/api"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/clock"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// ndjsonStream is the NDJSON stream of a turn, a streamEncoder: its
// lines (lineEncoder) and its writer goroutine, of the full snapshot
// stream (writer) or, with compact, of the compact one (compactWriter,
// compact.go; api.StreamModeHeader).
type ndjsonStream struct {
	t       *run
	compact bool
}

func (nw *ndjsonStream) header(h http.Header) {
	h.Set("Content-Type", "application/x-ndjson; charset=utf-8")
	if nw.compact {
		h.Set(api.StreamModeHeader, api.StreamModeCompact)
	}
}

// first is the first snapshot, complete in either mode.
func (nw *ndjsonStream) first(now time.Time, seq int64, first protocol.Message) []byte {
	return nw.t.lines.snapshotLineAt(nil, now, seq, protocol.StatusStreaming, first, protocol.Usage{}, nil)
}

func (nw *ndjsonStream) write(started time.Time, seq int64, first protocol.Message) {
	if nw.compact {
		nw.compactWriter(started, newCompactState(seq, first, protocol.Usage{}))
		return
	}
	nw.writer(started)
}

// end hands the writer the last lines: the terminal record's lines
// (fate.recordLines), or TURN_OUTCOME_INDETERMINATE when rec is nil, and
// waits for it to exit.
func (nw *ndjsonStream) end(rec *chat.Turn) {
	t := nw.t
	if rec == nil {
		t.out.send(t.fate.indeterminateLine())
		return
	}
	t.out.send(t.fate.recordLines(rec))
}

// writer is the goroutine that owns the response body while the turn
// streams, after the first snapshot, written at first. On each wake-up it
// waits until the gap after its last streaming snapshot has passed
// (snapshotGap: paced by that snapshot's size), then encodes the latest
// state, if it changed, as the next sequence. A slow reader blocks it in Write while
// the model keeps overwriting the state, so it receives fewer, newer
// snapshots (docs/design.md#snapshots). The terminal lines arrive on out.final and
// are written without delay; the writer exits after them or at the first
// write failure (closing out.failed).
func (nw *ndjsonStream) writer(first time.Time) {
	t := nw.t
	defer close(t.out.done)
	var (
		buf         []byte
		last        = first
		lastVersion uint64 // the first snapshot showed the initial state, version 0
		lastContent string
		lastCalls   string
	)
	gap := t.h.opts.SnapshotInterval // after the first snapshot
	for {
		select {
		case lines := <-t.out.final:
			t.out.write(lines)
			return
		case <-t.out.wake:
		}
		if wait := gap - clock.Since(t.h.clock, last); wait > 0 {
			timer := t.h.clock.NewTimer(wait)
			select {
			case lines := <-t.out.final:
				timer.Stop()
				t.out.write(lines)
				return
			case <-timer.C():
			}
		}
		v := t.state.view()
		// The lease is checked at the very instant the line is stamped
		// with (emittedAt): a stall after this check cannot date a line
		// past the lease it was checked against.
		now := t.h.clock.Now()
		if v.version == lastVersion || !t.lease.heldAt(now) {
			// Nothing new, or the lease can no longer be proven: then the
			// supervisor ends the turn, and no line may go out meanwhile.
			continue
		}
		seq, ok := t.seqs.next()
		if !ok {
			continue // closed: the terminal lines are on their way
		}
		assistant := t.assistant(v, protocol.MessageStreaming, "")
		calls := toolCallStates(assistant.ToolCalls)
		t.live.remember(seq, assistant, v.usage, lastContent == "" && assistant.Content != "", calls != lastCalls)
		lastContent, lastCalls = assistant.Content, calls
		lastVersion, last = v.version, t.h.clock.Now()
		if t.out.writeFailed {
			// The client is gone; with checkpoints the turn goes on, its
			// snapshots numbered for the checkpoints a resumer reads.
			continue
		}
		buf = t.lines.snapshotLineAt(buf[:0], now, seq, protocol.StatusStreaming, assistant, v.usage, nil)
		gap = t.lines.snapshotGap(len(buf))
		if !t.out.write(buf) && t.h.opts.CheckpointInterval == 0 {
			return
		}
	}
}

// snapshotGap is the wait after a streaming snapshot of n bytes: n at
// SnapshotBytesPerSecond, within [SnapshotInterval, MaxSnapshotGap].
func (le *lineEncoder) snapshotGap(n int) time.Duration {
	t := le.t
	o := t.h.opts
	d := time.Duration(float64(n) / float64(o.SnapshotBytesPerSecond) * float64(time.Second))
	return min(max(d, o.SnapshotInterval), o.MaxSnapshotGap)
}

// toolCallStates is a signature of the tool calls' ids and statuses: a
// change is a moment a checkpoint must not miss.
func toolCallStates(calls []protocol.ToolCall) string {
	var b strings.Builder
	for _, c := range calls {
		b.WriteString(c.ID)
		b.WriteByte('=')
		b.WriteString(c.Status)
		b.WriteByte(';')
	}
	return b.String()
}

// streamOut is a turn's response body once it streams, and the writer
// goroutine's channels. One goroutine writes at a time: the handler until
// the writer starts, then the writer.
type streamOut struct {
	w   http.ResponseWriter
	log *slog.Logger

	wake   chan struct{} // cap 1: the state changed
	final  chan []byte   // cap 1: the last lines; the writer exits after them
	done   chan struct{} // closed when the writer exits
	failed chan struct{} // closed at the first write failure
	// writeFailed is set at the first failed write; it belongs to the
	// goroutine that writes.
	writeFailed bool
}

func newStreamOut(w http.ResponseWriter, log *slog.Logger) *streamOut {
	return &streamOut{w: w, log: log, wake: make(chan struct{}, 1), final: make(chan []byte, 1), done: make(chan struct{}), failed: make(chan struct{})}
}

// notify tells the writer that the state changed. It never blocks: one
// pending wake-up is enough, the writer always reads the latest state.
func (o *streamOut) notify() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// send hands the last lines to the writer and waits for it to exit. If
// the writer already failed, the lines are dropped.
func (o *streamOut) send(lines []byte) {
	o.final <- lines // cap 1, sent once
	<-o.done
}

// write writes p and flushes it when the writer supports flushing
// (net/http; lambdaurl streams every Write as it is). It reports false,
// closing failed, at the first failure, and writes nothing after one.
func (o *streamOut) write(p []byte) bool {
	if o.writeFailed {
		return false
	}
	if len(p) == 0 {
		return true
	}
	_, err := o.w.Write(p)
	if err == nil {
		if ferr := http.NewResponseController(o.w).Flush(); ferr != nil && !errors.Is(ferr, http.ErrNotSupported) {
			err = ferr
		}
	}
	if err != nil {
		// The error's text names the client's address: debug level only.
		o.log.Info("stream write failed")
		o.log.Debug("stream write failure detail", "err", err)
		o.writeFailed = true
		close(o.failed)
		return false
	}
	return true
}

// lineEncoder encodes the NDJSON lines of the turn's stream: its
// snapshots (with the session's context in scopeSession, cut to fit the
// record limits) and diagnostics, and paces them by size (snapshotGap).
type lineEncoder struct{ t *run }

// snapshotLine appends the NDJSON line of a snapshot with sequence seq:
// the turn's messages, preceded in scopeSession by the context messages.
//
// A session-scope snapshot whose messages pass the canonical record
// limits (docs/protocol.md#the-canonical-message-record: 10,000 JSON values, protocol.MaxRecordNodes)
// leaves out the oldest whole context turns until it fits; the client
// pages them from the history function (docs/design.md#snapshots). Once dropped they stay
// dropped for the rest of the turn, so snapshots never grow back.
func (le *lineEncoder) snapshotLine(dst []byte, seq int64, status string, assistant protocol.Message, usage protocol.Usage, d *protocol.Diagnostic) []byte {
	t := le.t
	return le.snapshotLineAt(dst, t.h.clock.Now(), seq, status, assistant, usage, d)
}

// snapshotLineAt is snapshotLine emitted at now.
func (le *lineEncoder) snapshotLineAt(dst []byte, now time.Time, seq int64, status string, assistant protocol.Message, usage protocol.Usage, d *protocol.Diagnostic) []byte {
	t := le.t
	lineage := t.lineage
	ev := &protocol.Event{
		EventID:   t.h.opts.NewID(),
		SessionID: t.sessionID,
		TurnID:    t.turnID,
		Sequence:  seq,
		EmittedAt: protocol.FormatTime(now),
		Kind:      protocol.EventSnapshot,
		Snapshot: &protocol.SnapshotPayload{
			Status:  status,
			Usage:   usage,
			Error:   d,
			Lineage: &lineage,
		},
	}
	encode := func(dropped int) ([]byte, error) {
		ev.Snapshot.Messages = le.snapshotMessages(dropped, assistant)
		return protocol.AppendEventLine(dst, ev)
	}
	dropped := int(t.dropped.Load())
	out, err := encode(dropped)
	if n := len(t.turnStarts); err != nil && t.scope == scopeSession && dropped < n {
		// The smallest number of dropped turns that fits, by bisection
		// (fits(lo) is false, fits(hi) true): O(log n) encodings.
		lo, hi := dropped, n
		if _, err = encode(hi); err == nil {
			for hi-lo > 1 {
				if mid := lo + (hi-lo)/2; fits(encode(mid)) {
					hi = mid
				} else {
					lo = mid
				}
			}
			out, err = encode(hi)
			le.dropTurns(int64(hi))
		}
	}
	if err != nil {
		// The turn's own messages do not fit a record, or a bug made the
		// snapshot unencodable: the client gets a diagnostic in its
		// place, never a broken line.
		t.log.Error("snapshot encoding failed", "err", err)
		return le.diagnosticLine(dst, protocol.NewDiagnostic(protocol.CodeServerInternal), seq)
	}
	return out
}

// fits reports whether an encoding succeeded.
func fits(_ []byte, err error) bool { return err == nil }

// dropTurns raises the number of context turns session-scope snapshots
// leave out to n (never lowers it: the writer and the terminal snapshot
// may race).
func (le *lineEncoder) dropTurns(n int64) {
	t := le.t
	for {
		cur := t.dropped.Load()
		if n <= cur {
			return
		}
		if t.dropped.CompareAndSwap(cur, n) {
			t.log.Info("snapshot leaves out the oldest context turns", "droppedTurns", n, "contextTurns", len(t.turnStarts))
			return
		}
	}
}

// snapshotMessages returns a snapshot's messages: in scopeSession the
// context without its dropped oldest turns, then the user and assistant
// messages.
func (le *lineEncoder) snapshotMessages(dropped int, assistant protocol.Message) []protocol.Message {
	t := le.t
	var ctx []protocol.Message
	if t.scope == scopeSession {
		ctx = t.context
		if dropped >= len(t.turnStarts) {
			ctx = nil
		} else if dropped > 0 {
			ctx = t.context[t.turnStarts[dropped]:]
		}
	}
	msgs := make([]protocol.Message, 0, len(ctx)+2)
	msgs = append(msgs, ctx...)
	return append(msgs, t.user, assistant)
}

// diagnosticLine appends the NDJSON line of a server.turn.diagnostic with
// sequence seq.
func (le *lineEncoder) diagnosticLine(dst []byte, d protocol.Diagnostic, seq int64) []byte {
	t := le.t
	ev := &protocol.Event{
		EventID:    t.h.opts.NewID(),
		SessionID:  t.sessionID,
		TurnID:     t.turnID,
		Sequence:   seq,
		EmittedAt:  protocol.FormatTime(t.h.clock.Now()),
		Kind:       protocol.EventDiagnostic,
		Diagnostic: &d,
	}
	out, err := protocol.AppendEventLine(dst, ev)
	if err != nil {
		t.log.Error("diagnostic encoding failed", "err", err)
		return dst
	}
	return out
}
