package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/turnstream/turnstream/pkg/tool"
)

// caller returns the tool.Tool.Call of the server's tool name.
func (s *Source) caller(name string) func(context.Context, json.RawMessage) (tool.Result, error) {
	return func(ctx context.Context, args json.RawMessage) (tool.Result, error) {
		var res *mcpsdk.CallToolResult
		err := s.withSession(ctx, func(cs *mcpsdk.ClientSession) error {
			var err error
			res, err = cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: name, Arguments: args})
			return err
		})
		if err != nil {
			return tool.Result{}, callError(ctx, err)
		}
		text := resultText(res)
		if res.IsError {
			if text == "" {
				text = "The tool reported an error."
			}
			return tool.Result{}, &tool.Error{Message: cut(text, MaxErrorTextBytes)}
		}
		return tool.Result{Text: cut(text, tool.MaxResultTextBytes)}, nil
	}
}

// callError is the error of a call that got no result: the tool error
// the model reads says whether the call ran. A context that ended is
// returned as is (tool.Registry reports the timeout or the stop).
func callError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("mcp: %w (%w)", ctx.Err(), err)
	}
	var ns *notSent
	switch {
	case errors.As(err, &ns):
		return &tool.Error{Message: TextUnreachable, Err: err}
	case answered(err):
		return &tool.Error{Message: TextRefused, Err: err}
	}
	return &tool.Error{Message: TextUnknown, Err: err}
}

// codeRejectedByTransport is the JSON-RPC code of the SDK's own marker
// for a request its transport failed (jsonrpc2.ErrRejected, internal to
// the SDK): not an answer of the server.
const codeRejectedByTransport = -32005

// answered reports whether err carries a JSON-RPC error the server sent
// (anywhere in its chain), rather than a transport failure.
func answered(err error) bool {
	var rpc *jsonrpc.Error
	if errors.As(err, &rpc) && rpc.Code != codeRejectedByTransport {
		return true
	}
	switch u := err.(type) {
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if answered(e) {
				return true
			}
		}
	case interface{ Unwrap() error }:
		if e := u.Unwrap(); e != nil {
			return answered(e)
		}
	}
	return false
}

// resultText is what the model reads of a call's result: its text
// content, in order, each text resource's text, and a short note for
// what it cannot take here (images, audio, binary resources, links);
// the structured content as JSON when there is no text.
func resultText(res *mcpsdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcpsdk.TextContent:
			parts = append(parts, c.Text)
		case *mcpsdk.ImageContent:
			parts = append(parts, fmt.Sprintf("[an image (%s, %d bytes) the tool returned is not shown to the model]", mime(c.MIMEType), len(c.Data)))
		case *mcpsdk.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio (%s, %d bytes) the tool returned is not passed to the model]", mime(c.MIMEType), len(c.Data)))
		case *mcpsdk.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource link: %s %s]", c.URI, c.Name))
		case *mcpsdk.EmbeddedResource:
			switch r := c.Resource; {
			case r == nil:
			case r.Text != "":
				parts = append(parts, r.Text)
			default:
				parts = append(parts, fmt.Sprintf("[a resource (%s, %d bytes) the tool returned is not passed to the model: %s]", mime(r.MIMEType), len(r.Blob), r.URI))
			}
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			return string(b)
		}
	}
	return strings.Join(parts, "\n")
}

func mime(t string) string {
	if t == "" {
		return "no type"
	}
	return t
}

// cut returns text in at most max bytes of valid UTF-8: text itself when
// it fits, else its beginning and a note of how much was cut. Invalid
// UTF-8 is replaced.
func cut(text string, max int) string {
	text = strings.ToValidUTF8(text, "\uFFFD")
	if len(text) <= max {
		return text
	}
	note := fmt.Sprintf("\n[cut: the tool returned %d bytes; the first %%d are shown]", len(text))
	keep := max - len(note) - 8
	for keep > 0 && !utf8.RuneStart(text[keep]) {
		keep--
	}
	return text[:keep] + fmt.Sprintf(note, keep)
}
