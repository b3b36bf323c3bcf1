package protocol

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Ordered assistant content agentskit.chat.content/1
// (docs/protocol.md#ordered-assistant-content; docs/decisions.md D-0021): an
// assistant message's content string that is ContentPrefix followed by one
// JSON record per line.
const (
	// ContentPrefix is written once, by the first Encode: record separator
	// U+001E, the envelope name and version, LF.
	ContentPrefix = "\x1eagentskit.chat.content/1\n"
	// MaxContentBytes bounds the whole content string, prefix included, in
	// UTF-8 bytes.
	MaxContentBytes = 262_144
	// MaxContentRecords bounds the number of completed records.
	MaxContentRecords = 512
	// MaxContentText bounds one text record, in UTF-16 code units.
	MaxContentText = 16_384
)

// Content part kinds (docs/protocol.md#ordered-assistant-content).
const (
	ContentText      = "text"
	ContentComponent = "component"
)

// contentRoot is everything of the prefix up to its version digit.
const contentRoot = "\x1eagentskit.chat.content/"

// Errors of ContentEncoder.Encode.
var (
	// ErrContentLimit: the record would take the envelope past
	// MaxContentBytes or MaxContentRecords; nothing was written.
	ErrContentLimit = errors.New("protocol: assistant content limit reached")
	// ErrInvalidContentPart: the part is not a valid text or component part.
	ErrInvalidContentPart = errors.New("protocol: invalid assistant content part")
)

// ContentPart is one ordered part of assistant content: Kind ContentText with
// Text, or ContentComponent with Frame
// (docs/protocol.md#ordered-assistant-content).
type ContentPart struct {
	Kind  string
	Text  string
	Frame *RenderFrame
}

// DecodedContent is the result of DecodeContent: the completed parts in
// order and whether the content ends on a record boundary.
type DecodedContent struct {
	Parts    []ContentPart
	Complete bool
}

// ContentEncoder writes one assistant message's ordered content
// (docs/protocol.md#ordered-assistant-content). Use one encoder per assistant
// message; the zero value is ready. It is not safe for concurrent use.
type ContentEncoder struct {
	started bool
	bytes   int // UTF-8 bytes written so far, prefix included
	records int
}

// Encode returns the next chunk of the content string: ContentPrefix on the
// first call, then one JSON record and LF per record. A text part longer
// than MaxContentText UTF-16 code units is split into several text records
// at character boundaries (never inside a surrogate pair); an empty text,
// text that is not valid UTF-8 or an invalid frame is ErrInvalidContentPart.
// If the chunk would take the envelope past MaxContentBytes or
// MaxContentRecords, Encode returns ErrContentLimit and writes nothing.
// Text is JSON-escaped, so LFs and prefixes inside it stay inert.
func (e *ContentEncoder) Encode(p ContentPart) (string, error) {
	var b []byte
	if !e.started {
		b = append(b, ContentPrefix...)
	}
	records := 0
	switch p.Kind {
	case ContentText:
		if p.Text == "" || !utf8.ValidString(p.Text) {
			return "", fmt.Errorf("%w: text", ErrInvalidContentPart)
		}
		for rest := p.Text; rest != ""; {
			chunk := splitUTF16(rest, MaxContentText)
			rest = rest[len(chunk):]
			b = append(b, `{"kind":"text","text":`...)
			b, _ = appendJSONString(b, chunk)
			b = append(b, "}\n"...)
			records++
		}
	case ContentComponent:
		if p.Frame == nil {
			return "", fmt.Errorf("%w: frame", ErrInvalidContentPart)
		}
		b = append(b, `{"kind":"component","frame":`...)
		var err error
		if b, err = appendRenderFrame(b, p.Frame); err != nil {
			return "", fmt.Errorf("%w: %w", ErrInvalidContentPart, err)
		}
		b = append(b, "}\n"...)
		records++
	default:
		return "", fmt.Errorf("%w: kind", ErrInvalidContentPart)
	}
	if e.bytes+len(b) > MaxContentBytes || e.records+records > MaxContentRecords {
		return "", ErrContentLimit
	}
	e.started = true
	e.bytes += len(b)
	e.records += records
	return string(b), nil
}

// splitUTF16 returns the longest prefix of s (valid UTF-8) of at most max
// UTF-16 code units that ends on a character boundary.
func splitUTF16(s string, max int) string {
	units := 0
	for i, r := range s {
		n := 1
		if r > 0xFFFF {
			n = 2
		}
		if units+n > max {
			return s[:i]
		}
		units += n
	}
	return s
}

func contentDiag(code, message string) *Diagnostic {
	d := NewDiagnostic(code)
	if message != "" {
		d.Message = message
	}
	return &d
}

// DecodeContent decodes an ordered assistant content string
// (docs/protocol.md#ordered-assistant-content), in order:
//   - no leading U+001E: ASSISTANT_CONTENT_INVALID_RECORD ("Assistant
//     content envelope is invalid.");
//   - a prefix of ContentPrefix (the whole prefix without LF included):
//     no parts, Complete false;
//   - a first line other than the v1 root: ASSISTANT_CONTENT_UNSUPPORTED_VERSION
//     when it starts with "\x1eagentskit.chat.content/", otherwise
//     ASSISTANT_CONTENT_INVALID_RECORD;
//   - over MaxContentBytes in total: ASSISTANT_CONTENT_LIMIT_EXCEEDED
//     ("…exceeds its safety limit.");
//   - the body is split on LF; Complete is whether it ends with LF, and an
//     incomplete trailing fragment is dropped unvalidated;
//   - over MaxContentRecords completed records: LIMIT_EXCEEDED ("…exceeds
//     its record limit.");
//   - an empty line or an invalid record (strict JSON, JSON whitespace such
//     as a trailing CR allowed): ASSISTANT_CONTENT_INVALID_RECORD.
//
// Unknown keys of records are dropped; parts are never merged. Exactly one
// result is non-nil; every diagnostic is retryable false.
func DecodeContent(content string) (*DecodedContent, *Diagnostic) {
	if !strings.HasPrefix(content, "\x1e") {
		return nil, contentDiag(CodeAssistantContentInvalidRecord, msgContentEnvelopeInvalid)
	}
	if len(content) < len(ContentPrefix) && strings.HasPrefix(ContentPrefix, content) {
		return &DecodedContent{Parts: []ContentPart{}, Complete: false}, nil
	}
	header, body, _ := strings.Cut(content, "\n")
	if header+"\n" != ContentPrefix {
		if strings.HasPrefix(header, contentRoot) {
			return nil, contentDiag(CodeAssistantContentUnsupportedVersion, "")
		}
		return nil, contentDiag(CodeAssistantContentInvalidRecord, msgContentEnvelopeInvalid)
	}
	if len(content) > MaxContentBytes {
		return nil, contentDiag(CodeAssistantContentLimitExceeded, "")
	}
	lines := strings.Split(body, "\n")
	complete := strings.HasSuffix(content, "\n")
	lines = lines[:len(lines)-1] // the tail: "" when complete, else dropped unvalidated
	if len(lines) > MaxContentRecords {
		return nil, contentDiag(CodeAssistantContentLimitExceeded, msgContentRecordLimit)
	}
	out := &DecodedContent{Parts: make([]ContentPart, 0, len(lines)), Complete: complete}
	for _, line := range lines {
		p, ok := contentPartFromLine(line)
		if !ok {
			return nil, contentDiag(CodeAssistantContentInvalidRecord, "")
		}
		out.Parts = append(out.Parts, p)
	}
	return out, nil
}

// contentRecordFields are the fields of a content record, for the
// case-variant rule (IsCaseVariant).
var contentRecordFields = []string{"kind", "text", "frame"}

func contentPartFromLine(line string) (ContentPart, bool) {
	if line == "" {
		return ContentPart{}, false
	}
	n, err := parseJSON([]byte(line))
	if err != nil || n.kind != kindObject || n.hasCaseVariant(contentRecordFields) {
		return ContentPart{}, false
	}
	k, ok := strField(&n, "kind")
	if !ok {
		return ContentPart{}, false
	}
	switch k {
	case ContentText:
		t, ok := strField(&n, "text")
		if !ok || !lenBetween(t, 1, MaxContentText) {
			return ContentPart{}, false
		}
		return ContentPart{Kind: ContentText, Text: t}, true
	case ContentComponent:
		fr, ok := n.get("frame")
		if !ok {
			return ContentPart{}, false
		}
		f, ok := renderFrameFromNode(fr)
		if !ok {
			return ContentPart{}, false
		}
		return ContentPart{Kind: ContentComponent, Frame: f}, true
	}
	return ContentPart{}, false
}
