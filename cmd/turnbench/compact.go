package main

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/turnstream/turnstream/pkg/api"
	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// compactLog is what a compact-mode client saw of one stream: it applies
// whole lines with the client's compact cursor and renders the open
// append line's text as it comes (client.StreamOptions.Provisional), as
// the browser client does.
type compactLog struct {
	Lines     int
	Snapshots int // complete snapshot lines
	Appends   int // append lines
	BodyBytes int
	// FinalBytes is the terminal snapshot line with its newline.
	FinalBytes int
	// Final is the state the cursor ended with; Status its status.
	Final  *protocol.Event
	Status string
	// Visible is the time of each read before the terminal line that made
	// more of the answer visible (a longer rendered assistant content):
	// like the default mode's gap, the wait for the terminal line (the
	// save and the release come first) is left out.
	Visible []time.Time
	// Appended is the answer length (bytes) the append lines carried.
	Appended int
}

// MaxGap is the longest time between two visible updates, from the first
// to the last.
func (l *compactLog) MaxGap() time.Duration {
	var g time.Duration
	for i := 1; i < len(l.Visible); i++ {
		g = max(g, l.Visible[i].Sub(l.Visible[i-1]))
	}
	return g
}

// followCompact opens a compact stream with open and reads it as a compact
// client does.
func followCompact(open func(client.StreamOptions) (*client.Stream, error)) (*compactLog, error) {
	log := &compactLog{}
	s, err := open(client.StreamOptions{Compact: true, Provisional: true, OnLine: func(line []byte) {
		log.Lines++
		log.BodyBytes += len(line) + 1
		if protocol.IsAppendLine(line) {
			log.Appends++
			if a, err := protocol.DecodeAppend(line); err == nil {
				log.Appended += len(a.Text)
			}
		} else if ev, d := protocol.DecodeTurnEvent(line); d == nil && ev.Kind == protocol.EventSnapshot {
			log.Snapshots++
			if ev.Snapshot.Status != protocol.StatusStreaming {
				log.FinalBytes = len(line) + 1
			}
		}
	}})
	if err != nil {
		return nil, err
	}
	defer func() { _ = s.Close() }()
	if s.Header().Get(api.StreamModeHeader) != api.StreamModeCompact {
		return nil, errors.New("the server did not answer in compact mode")
	}
	shown := 0
	for {
		ev, err := s.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		msgs := ev.Snapshot.Messages
		if visible := len(msgs[len(msgs)-1].Content); visible > shown && ev.Snapshot.Status == protocol.StatusStreaming {
			log.Visible = append(log.Visible, time.Now())
			shown = visible
		}
	}
	log.Final = s.Snapshot()
	if log.Final != nil {
		log.Status = log.Final.Snapshot.Status
	}
	return log, nil
}

// compactRows renders the wire section's compact-mode rows, each beside
// the default (paced) mode of the same size and scope in the same run.
func compactRows(d *durableReport, pace, scale string) [][4]string {
	var rows [][4]string
	for _, p := range d.Wire {
		if !p.Compact {
			continue
		}
		var base *pacedWire
		for _, u := range d.Wire {
			if u.Paced && !u.Compact && u.Size == p.Size && u.TurnScope == p.TurnScope {
				base = u
			}
		}
		if base == nil {
			continue
		}
		scope := "session"
		if p.TurnScope {
			scope = "turn"
		}
		goal := ""
		if p.Size == 64<<10 {
			goal = "; goal <= 3x"
		}
		rows = append(rows, [4]string{
			fmt.Sprintf("bytes on the wire per turn, %s answer at %s, %s scope (10 prior turns%s), compact mode (append lines, text written every 50 ms, lines closed after 1 s)", kb(p.Size), pace, scope, scale),
			fmt.Sprintf("%d B TCP (%d B body), %d lines (%d complete snapshots, %d append lines), %.2fx the final snapshot (%d B); largest gap between visible updates %s", p.TCPBytes, p.BodyBytes, p.Lines, p.Snapshots, p.Appends, p.Ratio(), p.FinalBytes, ms(p.MaxGap)),
			fmt.Sprintf("default mode, paced: %d B TCP, %d lines, %.1fx; largest gap %s", base.TCPBytes, base.Lines, base.Ratio(), ms(base.MaxGap)),
			fmt.Sprintf("%.2fx vs %.1fx (%.3f of the default's bytes)%s", p.Ratio(), base.Ratio(), float64(p.TCPBytes)/float64(base.TCPBytes), goal),
		})
	}
	return rows
}
