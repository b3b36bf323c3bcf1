package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/turnstream/turnstream/internal/benchwire"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/model/echo"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/turn"
)

// unpaced is a SnapshotBytesPerSecond so large that the size never
// lengthens the wait: the behaviour before size pacing (a snapshot every
// SnapshotInterval while the text changes).
const unpaced = 1 << 50

// pacedWire is one answer size, scope and pacing of the wire section.
type pacedWire struct {
	Size      int
	TurnScope bool
	Paced     bool
	// Compact asks for the compact stream (on the paced handler);
	// Snapshots and Appends count its complete snapshots and append lines.
	Compact   bool
	Snapshots int
	Appends   int
	TCPBytes  int // read from the connection: headers, chunk framing, body
	BodyBytes int
	// FinalBytes is the final snapshot line with its newline; FirstBytes
	// the first line.
	FinalBytes int
	FirstBytes int
	// Took is the first line to the last, in the unscaled clock.
	Took  time.Duration
	Lines int
	// MaxGap is the longest time between two streaming (non-terminal)
	// snapshots, in the unscaled clock (measured gap x the scale); in
	// compact mode between two reads that made more text visible.
	MaxGap time.Duration
}

// Ratio is the bytes on the wire over the final snapshot.
func (p *pacedWire) Ratio() float64 { return float64(p.TCPBytes) / float64(p.FinalBytes) }

// Floor is the least body-bytes ratio any stream of complete snapshots can
// have for this turn with a snapshot at least every gap: the first
// snapshot, one every gap while the text grows linearly from the first's
// size to the final's over the turn's duration, and the terminal one.
func (p *pacedWire) Floor(gap time.Duration) float64 {
	if p.Took <= 0 || p.FinalBytes == 0 {
		return 0
	}
	first, final := float64(p.FirstBytes), float64(p.FinalBytes)
	n := int(p.Took / gap)
	sum := first + final
	for k := 1; k <= n; k++ {
		sum += first + (final-first)*float64(k)*float64(gap)/float64(p.Took)
	}
	return sum / final
}

// wireSection streams one answer of each size in each scope, paced by
// the defaults and in compact mode (compact.go) all at once, then the
// same unpaced, each on a session of 10 prior
// turns, with the clock sped up by ds.WireScale (text rate, bytes per
// second, snapshot interval and maximum gap scaled alike).
func wireSection(ctx context.Context, store chat.Store, prefix string, ds durableSettings) ([]*pacedWire, error) {
	f := time.Duration(ds.WireScale)
	var out []*pacedWire
	wirings := map[bool]*benchwire.Wiring{}
	for _, paced := range []bool{true, false} {
		bps := int64(turn.DefaultSnapshotBytesPerSecond) * int64(f)
		if !paced {
			bps = unpaced
		}
		w, err := benchwire.NewTurn(store, func(o *turn.Options) {
			durableOptions(checkEvery)(o)
			o.Model = benchwire.LongAnswer{Echo: echo.New(echoDelay/f, echoChunk)}
			o.SnapshotInterval = turn.DefaultSnapshotInterval / f
			o.SnapshotBytesPerSecond = bps
			o.MaxSnapshotGap = turn.DefaultMaxSnapshotGap / f
			o.CompactLineSpan = turn.DefaultCompactLineSpan / f
		})
		if err != nil {
			return nil, err
		}
		defer func() {
			w.WaitIdle(30 * time.Second) // the releases after the terminal lines
			w.Close()
		}()
		wirings[paced] = w
		for _, size := range ds.WireSizes {
			for _, ts := range []bool{false, true} {
				out = append(out, &pacedWire{Size: size, TurnScope: ts, Paced: paced})
				if paced {
					out = append(out, &pacedWire{Size: size, TurnScope: ts, Paced: true, Compact: true})
				}
			}
		}
	}
	errs := make([]error, len(out))
	// Two phases: the paced and compact turns together, then the unpaced
	// baseline, whose snapshots (hundreds of MB for the long answers) would
	// otherwise starve the others of CPU and stretch their gaps.
	for _, unpacedPhase := range []bool{false, true} {
		var wg sync.WaitGroup
		for i, pw := range out {
			if pw.Paced == unpacedPhase {
				continue
			}
			wg.Go(func() { errs[i] = measureWire(ctx, store, prefix, f, wirings[pw.Paced], pw) })
		}
		wg.Wait()
	}
	return out, errors.Join(errs...)
}

// measureWire streams pw's turn through w and fills pw in.
func measureWire(ctx context.Context, store chat.Store, prefix string, f time.Duration, w *benchwire.Wiring, pw *pacedWire) error {
	scope := "session"
	if pw.TurnScope {
		scope = "turn"
	}
	sid := fmt.Sprintf("%s-pw-%d-%s-%v-%v", prefix, pw.Size, scope, pw.Paced, pw.Compact)
	if err := benchwire.SeedTurns(ctx, store, sid, 10); err != nil {
		return err
	}
	var counted atomic.Int64
	hc := benchwire.NewHTTPClient(1, &counted)
	defer hc.CloseIdleConnections()
	open := benchwire.Submitting(ctx, w.Client(hc), sid, "t-measured", benchwire.Ask(pw.Size), pw.TurnScope)
	if pw.Compact {
		cl, err := followCompact(open)
		if err != nil || cl.Status != protocol.StatusComplete {
			return fmt.Errorf("compact wire turn %s: %v", sid, err)
		}
		pw.TCPBytes, pw.BodyBytes, pw.Lines, pw.FinalBytes = int(counted.Load()), cl.BodyBytes, cl.Lines, cl.FinalBytes
		pw.Snapshots, pw.Appends, pw.MaxGap = cl.Snapshots, cl.Appends, cl.MaxGap()*f
		return nil
	}
	log := benchwire.Follow(open, false, false, nil)
	last := log.Last()
	if log.Err != nil || last == nil || last.Status != protocol.StatusComplete {
		return fmt.Errorf("wire turn %s: %v, last %+v", sid, log.Err, last)
	}
	pw.TCPBytes, pw.Lines, pw.FinalBytes = int(counted.Load()), len(log.Lines), last.Bytes
	pw.FirstBytes, pw.Took = log.Lines[0].Bytes, last.At.Sub(log.Lines[0].At)*f
	for k, l := range log.Lines {
		pw.BodyBytes += l.Bytes
		if k > 0 && k < len(log.Lines)-1 {
			pw.MaxGap = max(pw.MaxGap, l.At.Sub(log.Lines[k-1].At)*f)
		}
	}
	return nil
}
