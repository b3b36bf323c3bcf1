package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/turnstream/turnstream/pkg/agui"
)

// aguiFrame is one frame of an AG-UI stream as conform reads it.
type aguiFrame struct {
	id  agui.EventID
	typ string
	ev  map[string]any
}

// conformAGUI is the agui check (docs/agui.md), run when the capabilities
// advertise the extension: a run posted to <turn>/agui answers
// text/event-stream; every frame is "id: <id>\ndata: <event>" with an id
// of the documented grammar, ids never going back; the stream starts with
// RUN_STARTED naming the run and a MESSAGES_SNAPSHOT, opens and closes its
// text messages and tool calls in order, and ends with RUN_FINISHED; a
// resume from its first event's id (GET
// <turn>/agui/threads/{threadId}/runs/{runId}, Last-Event-ID) answers the
// ended run at once and leaves a reader with the same answer. hc
// authenticates as the caller.
func conformAGUI(ctx context.Context, hc *http.Client, turnURL string, advertised bool) checkResult {
	const name = "agui"
	if !advertised {
		return checkResult{name: name, outcome: checkSkip, detail: "not advertised by /capabilities"}
	}
	sessionID, runID := "conform-agui-"+randomHex(6), "run-"+randomHex(4)
	body := fmt.Sprintf(`{"threadId":%q,"runId":%q,"messages":[{"id":"m1","role":"user","content":"conform agui"}]}`, sessionID, runID)
	live, p := aguiGet(ctx, hc, http.MethodPost, joinURL(turnURL, "/agui"), body, "")
	if len(p) == 0 {
		p = aguiStreamProblems(live, sessionID, runID)
	}
	if len(p) == 0 {
		resumed, rp := aguiGet(ctx, hc, http.MethodGet, joinURL(turnURL, "/agui/threads/"+sessionID+"/runs/"+runID), "", live[0].id.String())
		if len(rp) == 0 {
			rp = aguiStreamProblems(resumed, sessionID, runID)
		}
		for _, q := range rp {
			p = append(p, "resume: "+q)
		}
		if len(rp) == 0 && aguiAnswer(live) != aguiAnswer(resumed) {
			p.addf("the resumed run's answer differs from the live one")
		}
	}
	if len(p) > 0 {
		detail := strings.Join(p[:min(len(p), 3)], "; ")
		return checkResult{name: name, outcome: checkFail, detail: escapeText(detail, false)}
	}
	return checkResult{name: name, outcome: checkPass, detail: fmt.Sprintf("a run of %d events, ids ordered, ended RUN_FINISHED; resumed from %s", len(live), live[0].id)}
}

// aguiGet sends one AG-UI request (a POST of body, or a GET with
// Last-Event-ID lastID) and reads its frames.
func aguiGet(ctx context.Context, hc *http.Client, method, url, body, lastID string) ([]aguiFrame, problems) {
	var p problems
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		p.addf("%s: %v", method, err)
		return nil, p
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "text/event-stream")
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := hc.Do(req)
	if err != nil {
		p.addf("%s: %v", method, err)
		return nil, p
	}
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	switch {
	case err != nil:
		p.addf("%s: reading the stream: %v", method, err)
	case resp.StatusCode != http.StatusOK:
		p.addf("%s answered %d %s", method, resp.StatusCode, errorCode(raw))
	case !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream"):
		p.addf("%s answered content type %q", method, resp.Header.Get("Content-Type"))
	}
	if len(p) > 0 {
		return nil, p
	}
	var frames []aguiFrame
	for _, block := range strings.Split(string(bytes.TrimSuffix(raw, []byte("\n\n"))), "\n\n") {
		lines := strings.Split(block, "\n")
		if len(lines) != 2 || !strings.HasPrefix(lines[0], "id: ") || !strings.HasPrefix(lines[1], "data: ") {
			p.addf("frame %d is not \"id: ...\\ndata: ...\"", len(frames)+1)
			return nil, p
		}
		id, err := agui.ParseEventID(strings.TrimPrefix(lines[0], "id: "))
		var ev map[string]any
		if err != nil || json.Unmarshal([]byte(strings.TrimPrefix(lines[1], "data: ")), &ev) != nil {
			p.addf("frame %d: a bad id or event", len(frames)+1)
			return nil, p
		}
		typ, _ := ev["type"].(string)
		frames = append(frames, aguiFrame{id: id, typ: typ, ev: ev})
	}
	return frames, p
}

// aguiStreamProblems checks one stream's frames.
func aguiStreamProblems(frames []aguiFrame, sessionID, runID string) problems {
	var p problems
	if len(frames) < 2 || frames[0].typ != agui.TypeRunStarted || frames[0].ev["threadId"] != sessionID || frames[0].ev["runId"] != runID {
		p.addf("the stream does not start with RUN_STARTED of the run")
		return p
	}
	snapshot := false
	open, calls := map[any]bool{}, map[any]bool{}
	for i, f := range frames {
		if i > 1 && !aguiBefore(frames[i-1].id, f.id) {
			p.addf("id %s follows %s", f.id, frames[i-1].id)
		}
		switch f.typ {
		case agui.TypeMessagesSnapshot:
			snapshot = true
		case agui.TypeTextMessageStart:
			open[f.ev["messageId"]] = true
		case agui.TypeTextMessageContent, agui.TypeTextMessageEnd:
			if !open[f.ev["messageId"]] {
				p.addf("%s of a message not open", f.typ)
			}
			if f.typ == agui.TypeTextMessageEnd {
				delete(open, f.ev["messageId"])
			}
		case agui.TypeToolCallStart:
			calls[f.ev["toolCallId"]] = true
		case agui.TypeToolCallEnd:
			delete(calls, f.ev["toolCallId"])
		case agui.TypeRunFinished, agui.TypeRunError:
			if i != len(frames)-1 {
				p.addf("%s before the end", f.typ)
			}
		}
	}
	if last := frames[len(frames)-1]; last.typ != agui.TypeRunFinished {
		p.addf("the run ends with %s, want RUN_FINISHED", last.typ)
	}
	if !snapshot {
		p.addf("no MESSAGES_SNAPSHOT")
	}
	if len(open) > 0 || len(calls) > 0 {
		p.addf("messages or tool calls left open")
	}
	return p
}

// aguiBefore reports whether id a comes before b ("S.1" < "S.2" < "S").
func aguiBefore(a, b agui.EventID) bool {
	ai, bi := a.Index, b.Index
	if ai == 0 {
		ai = 1 << 30
	}
	if bi == 0 {
		bi = 1 << 30
	}
	return a.Sequence < b.Sequence || a.Sequence == b.Sequence && ai < bi
}

// aguiAnswer is the last assistant text a reader of frames holds: a
// snapshot replaces, a delta appends.
func aguiAnswer(frames []aguiFrame) string {
	texts, last := map[string]string{}, ""
	for _, f := range frames {
		switch f.typ {
		case agui.TypeMessagesSnapshot:
			clear(texts)
			msgs, _ := f.ev["messages"].([]any)
			for _, m := range msgs {
				mm, _ := m.(map[string]any)
				id, _ := mm["id"].(string)
				texts[id], _ = mm["content"].(string)
				if mm["role"] == "assistant" {
					last = id
				}
			}
		case agui.TypeTextMessageContent:
			id, _ := f.ev["messageId"].(string)
			d, _ := f.ev["delta"].(string)
			texts[id] += d
		}
	}
	return texts[last]
}
