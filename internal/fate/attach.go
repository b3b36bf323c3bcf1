package fate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/turnstream/turnstream/internal/ddbfault"
	tsclient "github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/turn/engine"
)

// An attach schedule (KindAttach, docs/attachments.md "One upload goes
// with one turn"): the attachments a submit names are checked and
// recorded as used by its turn before the claim, one conditional write
// per attachment, and another turn of the session that names one of
// them is refused ATTACHMENT_INVALID with nothing stored.

// RuleAttachOnce (A): of two turns that name the same attachment, at
// most one is accepted (a 200 stream, or shown by any route); a turn
// whose submit was refused ATTACHMENT_INVALID is shown by no route; the
// two are not both refused so (the attachment they share would then be
// used by no turn, although each client sent its submit again after
// every retryable answer); the turn in history at quiescence has a part
// of source attachment:<id> in its user message for each attachment it
// named. An upload that failed is reported under it too: the schedule
// could then check nothing.
const RuleAttachOnce = "attach-once"

// attach: turn a names two attachments (x, y) and turn b two (y, z), all
// three uploaded before the schedule starts through one process, which
// every submit and replay of the schedule goes to: one of the pause
// slots, held by the schedule while it runs, since a dev server keeps
// uploads in its memory and the other schedules kill and pause the
// shared processes (a restart would lose the files). The writes that record an attachment's use fail
// (500 before or after they apply, answers lost, hung) for 0.3-2 s from
// a's submit, and each client submits again after every retryable
// answer. b races a (within 0.3 s) in half the schedules and follows a's
// end in the others, when it must be refused. Half the schedules replay
// a's id after the end.
func (d *draw) attach() {
	ms := time.Millisecond
	durA := d.turn("a", time.Second, 3*time.Second)
	d.turn("b", 500*ms, 1500*ms)
	proc := pauseSlot
	d.add(Step{Do: "upload", Proc: proc, Files: []string{"x", "y", "z"}})
	faults := []ddbfault.Fault{ddbfault.ServerErrorBefore, ddbfault.ServerErrorAfter, ddbfault.LoseAnswer, ddbfault.Hang}
	d.add(Step{Do: "fault", Kind: kindAttachment, Fault: faults[d.rng.IntN(len(faults))], For: d.between(300*ms, 2*time.Second)})
	d.add(Step{Do: "submit", Turn: "a", Proc: proc, Files: []string{"x", "y"}})
	atB := d.between(0, 300*ms)
	if d.chance(0.5) {
		atB = durA + d.between(500*ms, 2*time.Second)
	}
	d.add(Step{At: atB, Do: "submit", Turn: "b", Proc: proc, Files: []string{"y", "z"}})
	d.reads(2+d.rng.IntN(3), 0, durA+3*time.Second)
	if d.chance(0.5) {
		d.add(Step{At: durA + 4*time.Second, Do: "replay", Turn: "a", Proc: proc})
	}
}

// testPNG is the bytes of every file an attach schedule uploads: a PNG's
// signature and padding, which is what the turn checks of an image.
var testPNG = append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 56)...)

// upload uploads st's files through st.Proc's artifacts route and upload
// store (pkg/client.Upload: the two phases a person's client takes) and
// files their ids by label; a failed upload is filed in uploadErrs.
func (s *schedRun) upload(ctx context.Context, st Step) {
	s.waitUp(ctx, st.Proc)
	s.lg.mu.Lock()
	s.lg.uploadProc = st.Proc
	s.lg.mu.Unlock()
	for _, label := range st.Files {
		id, err := s.r.c.upload(ctx, s.lg, st.Proc, s.plan.Session, label)
		s.lg.mu.Lock()
		if err != nil {
			s.lg.uploadErrs = append(s.lg.uploadErrs, fmt.Sprintf("upload of %s on p%d: %v", label, st.Proc, err))
		} else {
			s.lg.uploaded[label] = id
		}
		s.lg.mu.Unlock()
	}
}

// upload attaches testPNG, named label.png, to session on proc and
// returns its attachment id.
func (c *client) upload(ctx context.Context, lg *sessionLog, proc int, session, label string) (string, error) {
	base := c.ps.base(proc)
	cl, err := tsclient.New(tsclient.Options{
		TurnURL: base + "/turn/", ArtifactsURL: base + "/artifacts/", HTTPClient: c.hc,
		Auth: tsclient.Bearer(strings.TrimPrefix(lg.auth(), "Bearer ")),
	})
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, readBudget)
	defer cancel()
	f := tsclient.UploadFile{Filename: label + ".png", MediaType: "image/png", Size: int64(len(testPNG)), Body: bytes.NewReader(testPNG)}
	return tsclient.Upload(ctx, cl, session, f, nil)
}

// userSources returns the sources of the parts of t's first message
// when it is the user's.
func (t *wireTurn) userSources() []string {
	var msgs []struct {
		Role  string `json:"role"`
		Parts []struct {
			Source string `json:"source"`
		} `json:"parts"`
	}
	if json.Unmarshal(t.Messages, &msgs) != nil || len(msgs) == 0 || msgs[0].Role != "user" {
		return nil
	}
	var out []string
	for _, p := range msgs[0].Parts {
		out = append(out, p.Source)
	}
	return out
}

// attachOnce checks RuleAttachOnce.
func (c rules) attachOnce() {
	in := c.in
	for _, e := range in.UploadErrors {
		c.addRule("A", RuleAttachOnce, "", "an upload failed, so the schedule checked nothing of its turns' attachments", e)
	}
	turns := slices.Sorted(func(yield func(string) bool) {
		for t := range in.Files {
			if !yield(t) {
				return
			}
		}
	})
	for i, t := range turns {
		for _, u := range turns[i+1:] {
			if !slices.ContainsFunc(in.Files[t], func(id string) bool { return slices.Contains(in.Files[u], id) }) {
				continue
			}
			st, okT := c.accepted(t)
			su, okU := c.accepted(u)
			if okT && okU {
				c.addRule("A", RuleAttachOnce, u, fmt.Sprintf("turns %s and %s name the same attachment, and both were accepted", t, u), st, su)
			}
			rt, ru := c.attachmentRefusal(t), c.attachmentRefusal(u)
			if rt != nil && ru != nil {
				c.addRule("A", RuleAttachOnce, u, fmt.Sprintf("turns %s and %s were both refused %s: the attachment they share is used by neither", t, u, protocol.CodeAttachmentInvalid),
					rt.String(), ru.String())
			}
		}
	}
	for _, t := range turns {
		if r := c.attachmentRefusal(t); r != nil {
			if desc, ok := c.accepted(t); ok {
				c.addRule("A", RuleAttachOnce, t, fmt.Sprintf("refused %s, yet the turn was accepted", protocol.CodeAttachmentInvalid), r.String(), desc)
			}
		}
		ft := in.Final.turn(t)
		if ft == nil {
			continue
		}
		sources := ft.userSources()
		for _, id := range in.Files[t] {
			if !slices.Contains(sources, engine.AttachmentSource+id) {
				c.addRule("A", RuleAttachOnce, t, fmt.Sprintf("history at quiescence lacks the part of attachment %s in the turn's user message", id),
					fmt.Sprintf("%s: %s", in.Final.turns, brief(string(ft.Messages))))
			}
		}
	}
}

// accepted describes how turn t was shown accepted: a 200 stream of it,
// or any route that showed it.
func (c rules) accepted(t string) (string, bool) {
	if s := c.live[t]; s != nil {
		return s.String(), true
	}
	if len(c.terms[t]) > 0 {
		return c.terms[t][0].Desc, true
	}
	if len(c.runs[t]) > 0 {
		return c.runs[t][0].Desc, true
	}
	if c.in.Final.turn(t) != nil {
		return c.in.Final.turns.String() + " lists it", true
	}
	return "", false
}

// attachmentRefusal returns turn t's last submit when it was refused
// ATTACHMENT_INVALID (its client then gave up), nil otherwise.
func (c rules) attachmentRefusal(t string) *Stream {
	var last *Stream
	for _, s := range c.in.Streams {
		if s.Kind == "submit" && s.Turn == t {
			last = s
		}
	}
	if last != nil && last.Status == 400 && last.ErrCode == protocol.CodeAttachmentInvalid {
		return last
	}
	return nil
}
