package agui_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/pkg/agui"
)

func TestDecodeRunAgentInput(t *testing.T) {
	const user = `{"id":"m1","role":"user","content":"hello"}`
	const assistant = `{"id":"a1","role":"assistant","content":"hi"}`
	approve := `[{"interruptId":"cf00","status":"resolved","payload":{"approved":true}}]`
	for name, tc := range map[string]struct {
		body string
		want agui.RunInput
	}{
		"plain": {`{"threadId":"s1","runId":"r1","messages":[` + user + `]}`,
			agui.RunInput{ThreadID: "s1", RunID: "r1", Input: "hello"}},
		"history ignored, the last message read": {`{"threadId":"s1","runId":"r1","messages":[` + assistant + `,` + user + `]}`,
			agui.RunInput{ThreadID: "s1", RunID: "r1", Input: "hello"}},
		"every AG-UI member accepted": {`{"threadId":"s1","runId":"r1","protocolVersion":"1.0","parentRunId":"p","state":{},"tools":[],"context":[],"forwardedProps":{},"messages":[` + user + `]}`,
			agui.RunInput{ThreadID: "s1", RunID: "r1", Input: "hello"}},
		"decision with a label": {`{"threadId":"s1","runId":"r1","messages":[` + user + `],"resume":` + approve + `}`,
			agui.RunInput{ThreadID: "s1", RunID: "r1", Input: "hello", Decision: &agui.Decision{InterruptID: "cf00", Approve: true}}},
		"decision after the assistant message": {`{"threadId":"s1","runId":"r1","messages":[` + user + `,` + assistant + `],"resume":` + approve + `}`,
			agui.RunInput{ThreadID: "s1", RunID: "r1", Input: agui.LabelApproved, Decision: &agui.Decision{InterruptID: "cf00", Approve: true}}},
		"denial": {`{"threadId":"s1","runId":"r1","messages":[],"resume":[{"interruptId":"cf00","status":"resolved","payload":{"approved":false}},{"interruptId":"x y","status":"cancelled"}]}`,
			agui.RunInput{ThreadID: "s1", RunID: "r1", Input: agui.LabelDenied, Decision: &agui.Decision{InterruptID: "cf00"}}},
		"cancelled entries change nothing": {`{"threadId":"s1","runId":"r1","messages":[` + user + `],"resume":[{"interruptId":"cf00","status":"cancelled"}]}`,
			agui.RunInput{ThreadID: "s1", RunID: "r1", Input: "hello"}},
		"text parts joined": {`{"threadId":"s1","runId":"r1","messages":[{"id":"m","role":"user","content":[{"type":"text","text":"hel","id":"p1","metadata":{}},{"type":"text","text":"lo"}]}]}`,
			agui.RunInput{ThreadID: "s1", RunID: "r1", Input: "hello"}},
		"a decision's label in parts": {`{"threadId":"s1","runId":"r1","messages":[{"id":"m","role":"user","content":[{"type":"text","text":"yes"}]}],"resume":` + approve + `}`,
			agui.RunInput{ThreadID: "s1", RunID: "r1", Input: "yes", Decision: &agui.Decision{InterruptID: "cf00", Approve: true}}},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := agui.DecodeRunAgentInput([]byte(tc.body))
			if err != nil {
				t.Fatalf("error %v", err)
			}
			if got.ThreadID != tc.want.ThreadID || got.RunID != tc.want.RunID || got.Input != tc.want.Input ||
				(got.Decision == nil) != (tc.want.Decision == nil) || got.Decision != nil && *got.Decision != *tc.want.Decision {
				t.Fatalf("got %+v (decision %+v), want %+v", got, got.Decision, tc.want)
			}
		})
	}
}

// TestDecodeMediaParts: a user message's image and document parts, in
// order: attachment references and inline bytes, decoded.
func TestDecodeMediaParts(t *testing.T) {
	body := `{"threadId":"s1","runId":"r1","messages":[{"id":"m","role":"user","content":[` +
		`{"type":"image","source":{"type":"url","value":"attachment:att_A","mimeType":"image/png"}},` +
		`{"type":"text","text":"what is this?"},` +
		`{"type":"document","id":"d","source":{"type":"data","value":"aGVsbG8=","mimeType":"text/plain"},"metadata":{"k":1}}]}]}`
	got, err := agui.DecodeRunAgentInput([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	want := []agui.MediaPart{{Kind: "image", AttachmentID: "att_A"}, {Kind: "document", MediaType: "text/plain", Data: []byte("hello")}}
	if got.Input != "what is this?" || len(got.Media) != len(want) {
		t.Fatalf("got input %q, media %+v", got.Input, got.Media)
	}
	for i, m := range got.Media {
		if m.Kind != want[i].Kind || m.AttachmentID != want[i].AttachmentID || m.MediaType != want[i].MediaType || string(m.Data) != string(want[i].Data) {
			t.Errorf("media %d = %+v, want %+v", i, m, want[i])
		}
	}
	plain, err := agui.DecodeRunAgentInput([]byte(`{"threadId":"s1","runId":"r1","messages":[{"id":"m","role":"user","content":"hi"}]}`))
	if err != nil || plain.Media != nil {
		t.Fatalf("string content: media %+v, error %v", plain.Media, err)
	}
}

// TestDecodeRunAgentInputRejections: each bad input is one typed error
// naming the field; no error text repeats a value of the input.
func TestDecodeRunAgentInputRejections(t *testing.T) {
	const secret = "s3cr3t"
	msg := func(role, content string) string { return `{"id":"m","role":"` + role + `","content":` + content + `}` }
	for name, tc := range map[string]struct {
		body  string
		field string // "" for ErrInvalidJSON
	}{
		"empty":                  {``, ""},
		"not JSON":               {`{"threadId":`, ""},
		"an array":               {`[1]`, "(body)"},
		"duplicate key":          {`{"threadId":"s1","threadId":"s2","runId":"r","messages":[]}`, "(body)"},
		"case variant":           {`{"threadId":"s1","ThreadId":"` + secret + `","runId":"r","messages":[]}`, "(body)"},
		"wrong type":             {`{"threadId":1,"runId":"r","messages":[]}`, "(body)"},
		"no thread":              {`{"runId":"r","messages":[` + msg("user", `"x"`) + `]}`, "threadId"},
		"thread not a SafeId":    {`{"threadId":"a b ` + secret + `","runId":"r","messages":[]}`, "threadId"},
		"run not a SafeId":       {`{"threadId":"s","runId":"` + secret + `/x","messages":[]}`, "runId"},
		"protocol 2":             {`{"threadId":"s","runId":"r","protocolVersion":"2.0","messages":[]}`, "protocolVersion"},
		"no messages":            {`{"threadId":"s","runId":"r"}`, "messages"},
		"a message not object":   {`{"threadId":"s","runId":"r","messages":["` + secret + `"]}`, "messages"},
		"no user message":        {`{"threadId":"s","runId":"r","messages":[` + msg("assistant", `"x"`) + `]}`, "messages"},
		"blank input":            {`{"threadId":"s","runId":"r","messages":[` + msg("user", `" \t\u00a0"`) + `]}`, "messages"},
		"parts of blank text":    {`{"threadId":"s","runId":"r","messages":[` + msg("user", `[{"type":"text","text":" "},{"type":"text","text":"\n"}]`) + `]}`, "messages"},
		"parts without text":     {`{"threadId":"s","runId":"r","messages":[` + msg("user", `[{"type":"image","source":{"type":"url","value":"attachment:att_1"}}]`) + `]}`, "messages"},
		"empty parts":            {`{"threadId":"s","runId":"r","messages":[` + msg("user", `[]`) + `]}`, "messages"},
		"part not an object":     {`{"threadId":"s","runId":"r","messages":[` + msg("user", `["`+secret+`"]`) + `]}`, "messages"},
		"part without type":      {`{"threadId":"s","runId":"r","messages":[` + msg("user", `[{"text":"`+secret+`"}]`) + `]}`, "messages"},
		"part of unknown type":   {`{"threadId":"s","runId":"r","messages":[` + msg("user", `[{"type":"`+secret+`","text":"hi"}]`) + `]}`, "messages"},
		"part member case":       {`{"threadId":"s","runId":"r","messages":[` + msg("user", `[{"type":"text","Text":"`+secret+`","text":"hi"}]`) + `]}`, "messages"},
		"text part with source":  {`{"threadId":"s","runId":"r","messages":[` + msg("user", `[{"type":"text","text":"hi","source":{"type":"url","value":"attachment:a"}}]`) + `]}`, "messages"},
		"audio part":             {`{"threadId":"s","runId":"r","messages":[` + msg("user", `[{"type":"text","text":"hi"},{"type":"audio","source":{"type":"data","value":"AAAA","mimeType":"audio/wav"}}]`) + `]}`, "messages"},
		"image without source":   {`{"threadId":"s","runId":"r","messages":[` + msg("user", `[{"type":"text","text":"hi"},{"type":"image"}]`) + `]}`, "messages"},
		"image with text":        {`{"threadId":"s","runId":"r","messages":[` + msg("user", `[{"type":"text","text":"hi"},{"type":"image","text":"x","source":{"type":"url","value":"attachment:a"}}]`) + `]}`, "messages"},
		"an https URL":           {`{"threadId":"s","runId":"r","messages":[` + msg("user", `[{"type":"text","text":"hi"},{"type":"image","source":{"type":"url","value":"https://169.254.169.254/`+secret+`"}}]`) + `]}`, "messages"},
		"an attachment not safe": {`{"threadId":"s","runId":"r","messages":[` + msg("user", `[{"type":"text","text":"hi"},{"type":"image","source":{"type":"url","value":"attachment:../`+secret+`"}}]`) + `]}`, "messages"},
		"a file source":          {`{"threadId":"s","runId":"r","messages":[` + msg("user", `[{"type":"text","text":"hi"},{"type":"document","source":{"type":"file","value":"file-`+secret+`","provider":"openai"}}]`) + `]}`, "messages"},
		"an unknown source":      {`{"threadId":"s","runId":"r","messages":[` + msg("user", `[{"type":"text","text":"hi"},{"type":"image","source":{"type":"`+secret+`","value":"x"}}]`) + `]}`, "messages"},
		"data without mimeType":  {`{"threadId":"s","runId":"r","messages":[` + msg("user", `[{"type":"text","text":"hi"},{"type":"image","source":{"type":"data","value":"iVBORw0KGgo="}}]`) + `]}`, "messages"},
		"data not base64":        {`{"threadId":"s","runId":"r","messages":[` + msg("user", `[{"type":"text","text":"hi"},{"type":"image","source":{"type":"data","value":"`+secret+`!","mimeType":"image/png"}}]`) + `]}`, "messages"},
		"data unpadded":          {`{"threadId":"s","runId":"r","messages":[` + msg("user", `[{"type":"text","text":"hi"},{"type":"image","source":{"type":"data","value":"iVBORw0KGgo","mimeType":"image/png"}}]`) + `]}`, "messages"},
		"data empty":             {`{"threadId":"s","runId":"r","messages":[` + msg("user", `[{"type":"text","text":"hi"},{"type":"image","source":{"type":"data","value":"","mimeType":"image/png"}}]`) + `]}`, "messages"},
		"26 media parts":         {`{"threadId":"s","runId":"r","messages":[` + msg("user", `[{"type":"text","text":"hi"}`+strings.Repeat(`,{"type":"image","source":{"type":"url","value":"attachment:a"}}`, 26)+`]`) + `]}`, "messages"},
		"media in a decision":    {`{"threadId":"s","runId":"r","messages":[` + msg("user", `[{"type":"text","text":"ok"},{"type":"image","source":{"type":"url","value":"attachment:a"}}]`) + `],"resume":[{"interruptId":"a","status":"resolved","payload":{"approved":true}}]}`, "messages"},
		"role case variant":      {`{"threadId":"s","runId":"r","messages":[{"id":"m","role":"user","Role":"x","content":"hi"}]}`, "messages"},
		"two resolved":           {`{"threadId":"s","runId":"r","messages":[],"resume":[{"interruptId":"a","status":"resolved","payload":{"approved":true}},{"interruptId":"b","status":"resolved","payload":{"approved":true}}]}`, "resume"},
		"bad status":             {`{"threadId":"s","runId":"r","messages":[],"resume":[{"interruptId":"a","status":"` + secret + `"}]}`, "resume"},
		"payload not approval":   {`{"threadId":"s","runId":"r","messages":[],"resume":[{"interruptId":"a","status":"resolved","payload":"yes"}]}`, "resume"},
		"approved not boolean":   {`{"threadId":"s","runId":"r","messages":[],"resume":[{"interruptId":"a","status":"resolved","payload":{"approved":"` + secret + `"}}]}`, "resume"},
		"interrupt id not ours":  {`{"threadId":"s","runId":"r","messages":[],"resume":[{"interruptId":"` + secret + ` x","status":"resolved","payload":{"approved":true}}]}`, "resume"},
		"resume entry case":      {`{"threadId":"s","runId":"r","messages":[],"resume":[{"interruptId":"a","Status":"x","status":"cancelled"}]}`, "resume"},
		"resume entry not entry": {`{"threadId":"s","runId":"r","messages":[],"resume":[1]}`, "resume"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := agui.DecodeRunAgentInput([]byte(tc.body))
			if tc.field == "" {
				if !errors.Is(err, agui.ErrInvalidJSON) {
					t.Fatalf("error %v, want ErrInvalidJSON", err)
				}
				return
			}
			var ie *agui.InputError
			if !errors.As(err, &ie) {
				t.Fatalf("error %v, want *InputError", err)
			}
			if ie.Field != tc.field {
				t.Errorf("field %q, want %q (%v)", ie.Field, tc.field, err)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("the error repeats the input: %v", err)
			}
		})
	}
}

func TestEventIDs(t *testing.T) {
	for _, s := range []string{"0", "1", "42", "42.1", "9007199254740991", "7.999999"} {
		id, err := agui.ParseEventID(s)
		if err != nil || id.String() != s {
			t.Errorf("%q: %v, %v", s, id, err)
		}
	}
	if id, _ := agui.ParseEventID("42"); !id.Complete() {
		t.Error("42 is not complete")
	}
	for _, s := range []string{"", "-1", "01", "1.0", "1.01", "1.", ".1", "1.2.3", "9007199254740992", "1 ", "1e3", "x", "1.1000000"} {
		if _, err := agui.ParseEventID(s); !errors.Is(err, agui.ErrInvalidEventID) {
			t.Errorf("%q parsed", s)
		}
	}
}

func TestAppendBatch(t *testing.T) {
	got, err := agui.AppendBatch(nil, 7, []agui.Event{
		{Type: agui.TypeTextMessageContent, MessageID: "t.a", Delta: agui.Text("<b>&")},
		{Type: agui.TypeMessagesSnapshot, Messages: []agui.Message{}},
		{Type: agui.TypeRunFinished, ThreadID: "s", RunID: "t", Outcome: &agui.Outcome{Type: agui.OutcomeSuccess}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "id: 7.1\ndata: {\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"t.a\",\"delta\":\"<b>&\"}\n\n" +
		"id: 7.2\ndata: {\"type\":\"MESSAGES_SNAPSHOT\",\"messages\":[]}\n\n" +
		"id: 7\ndata: {\"type\":\"RUN_FINISHED\",\"threadId\":\"s\",\"runId\":\"t\",\"outcome\":{\"type\":\"success\"}}\n\n"
	if string(got) != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}
