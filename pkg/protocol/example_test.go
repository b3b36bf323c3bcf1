package protocol_test

import (
	"fmt"

	"github.com/turnstream/turnstream/pkg/protocol"
)

func ExampleDecodeTurnEvent() {
	body := []byte(`{"protocol":"agentskit.chat.turn","version":1,"eventId":"e1","sessionId":"s1","turnId":"t1",` +
		`"sequence":0,"emittedAt":"2026-07-11T03:00:00.000Z","event":"client.turn.submit","payload":{"input":"hello"}}`)
	ev, diag := protocol.DecodeTurnEvent(body)
	if diag != nil {
		fmt.Println("rejected:", diag.Code)
		return
	}
	fmt.Println(ev.Kind, ev.SessionID, ev.TurnID, ev.Submit.Input)

	// The same event with a repeated key is never read two ways.
	_, diag = protocol.DecodeTurnEvent([]byte(`{"protocol":"agentskit.chat.turn","version":1,"version":2}`))
	fmt.Println(string(protocol.EncodeDecoderDiagnostic(*diag)))

	// A diagnostic echoes only a valid eventId, never other input.
	_, diag = protocol.DecodeTurnEvent([]byte(`{"protocol":"agentskit.chat.turn","version":1,"eventId":"safe","secret":"do-not-leak"}`))
	fmt.Println(string(protocol.EncodeDecoderDiagnostic(*diag)))
	// Output:
	// client.turn.submit s1 t1 hello
	// {"code":"PROTOCOL_INVALID_PAYLOAD","message":"Turn event is not valid JSON.","retryable":false}
	// {"code":"PROTOCOL_INVALID_PAYLOAD","message":"Turn event payload is invalid.","retryable":false,"eventId":"safe"}
}

func ExampleContentEncoder() {
	var enc protocol.ContentEncoder
	var content string
	for _, part := range []protocol.ContentPart{
		{Kind: protocol.ContentText, Text: "Here are your options:\n"},
		{Kind: protocol.ContentComponent, Frame: &protocol.RenderFrame{
			ComponentKey: "choice-list",
			InstanceID:   "choice-1",
			Props:        []byte(`{"prompt":"Pick one","choices":[{"id":"a","label":"A"}]}`),
			Fallback:     protocol.Fallback{Kind: "choice-list", Summary: "Pick A."},
		}},
	} {
		chunk, err := enc.Encode(part)
		if err != nil {
			fmt.Println(err)
			return
		}
		content += chunk
	}
	fmt.Printf("%q\n", content[:len(protocol.ContentPrefix)])

	decoded, diag := protocol.DecodeContent(content)
	if diag != nil {
		fmt.Println(diag.Code)
		return
	}
	for _, p := range decoded.Parts {
		switch p.Kind {
		case protocol.ContentText:
			fmt.Printf("text %q\n", p.Text)
		case protocol.ContentComponent:
			fmt.Println("component", p.Frame.ComponentKey, string(p.Frame.Props))
		}
	}
	fmt.Println("complete:", decoded.Complete)
	// Output:
	// "\x1eagentskit.chat.content/1\n"
	// text "Here are your options:\n"
	// component choice-list {"prompt":"Pick one","choices":[{"id":"a","label":"A"}]}
	// complete: true
}

func ExampleIsCaseVariant() {
	fields := []string{"sessionId", "turnId"}
	for _, key := range []string{"sessionId", "SessionId", "TURNID", "reason"} {
		fmt.Println(key, protocol.IsCaseVariant(key, fields...))
	}
	// Output:
	// sessionId false
	// SessionId true
	// TURNID true
	// reason false
}
