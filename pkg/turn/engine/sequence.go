package engine

import (
	"sync"

	"github.com/turnstream/turnstream/pkg/protocol"
)

// sequencer allocates a turn's sequences: from the claim's base sequence,
// one per line, strictly increasing and contiguous, until it is closed for
// the terminal lines. Safe for concurrent use.
type sequencer struct {
	mu     sync.Mutex
	seq    int64 // the last sequence allocated to a line
	closed bool  // no more streaming lines
}

// start sets the base: the first sequence allocated is base+1.
func (s *sequencer) start(base int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq = base
}

// next returns the next sequence for a streaming line, or false once
// closed.
func (s *sequencer) next() (int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, false
	}
	s.seq++
	return s.seq, true
}

// last returns the last sequence allocated.
func (s *sequencer) last() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seq
}

// close ends streaming lines and returns the last sequence allocated
// (written, or being written before the terminal lines).
func (s *sequencer) close() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return s.seq
}

// liveState is the state the latest snapshot carried: what a checkpoint
// persists (a resumer's first line rebuilds exactly this snapshot).
type liveState struct {
	seq       int64
	assistant protocol.Message
	usage     protocol.Usage
}

// liveStates holds the state of the latest sequence a client may hold,
// for checkpoints, and asks the supervisor for a checkpoint now at the
// moments that must not be lost. Safe for concurrent use.
type liveStates struct {
	mu   sync.Mutex
	last liveState
	// urgent (cap 1) asks the supervisor for a checkpoint now: at each
	// tool call's state change, and at the first text when textUrgent.
	urgent chan struct{}
	// textUrgent: the first text is a moment that must not be lost
	// (checkpoints of every interval, Options.CheckpointMinChange zero).
	textUrgent bool
}

func newLiveStates(textUrgent bool) *liveStates {
	return &liveStates{urgent: make(chan struct{}, 1), textUrgent: textUrgent}
}

// remember records the state of seq, and asks for a checkpoint now at a
// tool call's state change (calls) and, when textUrgent, at the first
// text (firstText).
func (l *liveStates) remember(seq int64, assistant protocol.Message, usage protocol.Usage, firstText, calls bool) {
	l.mu.Lock()
	l.last = liveState{seq: seq, assistant: assistant, usage: usage}
	l.mu.Unlock()
	if calls || firstText && l.textUrgent {
		select {
		case l.urgent <- struct{}{}:
		default:
		}
	}
}

// latest returns the last state remembered (seq 0: none yet).
func (l *liveStates) latest() liveState {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last
}
