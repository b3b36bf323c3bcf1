package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/turn"
)

// compactLog is what a compact-mode client saw of one stream: it reads the
// body as it arrives, applies whole lines with a CompactCursor and renders
// the open append line's text as it comes (protocol.CompactCursor
// Provisional), as the browser client does.
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

// followCompact sends req with StreamModeHeader compact and reads its
// stream as a compact client of session sessionID does.
func followCompact(ctx context.Context, c *http.Client, req *http.Request, sessionID string) (*compactLog, error) {
	req = req.WithContext(ctx)
	req.Header.Set(turn.StreamModeHeader, turn.StreamModeCompact)
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer drain(resp.Body)
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("status %d %s", resp.StatusCode, apiErrorCode(raw))
	}
	if resp.Header.Get(turn.StreamModeHeader) != turn.StreamModeCompact {
		return nil, errors.New("the server did not answer in compact mode")
	}
	cur, err := protocol.NewCompactCursor(sessionID)
	if err != nil {
		return nil, err
	}
	log := &compactLog{}
	var pending []byte
	buf := make([]byte, 32<<10)
	shown, terminal := 0, false
	for {
		n, rerr := resp.Body.Read(buf)
		now := time.Now()
		pending = append(pending, buf[:n]...)
		log.BodyBytes += n
		for {
			i := bytes.IndexByte(pending, '\n')
			if i < 0 {
				break
			}
			line := pending[:i]
			log.Lines++
			if protocol.IsAppendLine(line) {
				log.Appends++
				if a, err := protocol.DecodeAppend(line); err == nil {
					log.Appended += len(a.Text)
				}
			} else if ev, d := protocol.DecodeTurnEvent(line); d == nil && ev.Kind == protocol.EventSnapshot {
				log.Snapshots++
				if ev.Snapshot.Status != protocol.StatusStreaming {
					log.FinalBytes, terminal = i+1, true
				}
			}
			if _, err := cur.Apply(line); err != nil {
				return nil, fmt.Errorf("line %d: %w", log.Lines, err)
			}
			pending = pending[i+1:]
		}
		visible := 0
		if s := cur.Snapshot(); s != nil {
			msgs := s.Snapshot.Messages
			visible = len(msgs[len(msgs)-1].Content)
		}
		if p, ok := cur.Provisional(pending); ok {
			visible = max(visible, len(p))
		}
		if visible > shown && !terminal {
			log.Visible = append(log.Visible, now)
		}
		shown = max(shown, visible)
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return nil, rerr
		}
	}
	if len(pending) > 0 {
		return nil, errors.New("the stream ended inside a line")
	}
	log.Final = cur.Snapshot()
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
