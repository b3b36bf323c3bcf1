package sessionapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// writeJSON encodes v completely before writing a 200 response, so an
// encoding failure becomes a clean 500 rather than a truncated body.
// Characters <, > and & are written as themselves, so stored strings keep
// their bytes.
func writeJSON(w http.ResponseWriter, v any) error {
	b, err := marshal(v)
	if err != nil {
		return fmt.Errorf("encode response: %w", err)
	}
	writeBody(w, http.StatusOK, b)
	return nil
}

// marshal is json.Marshal without HTML escaping and without the trailing
// newline of json.Encoder.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// withArtifacts returns msgs with refs placed in the metadata.artifacts of the
// last assistant message (agent UI protocol AssistantMessage.artifacts;
// docs/design.md#history-and-artifacts-api), other metadata keys kept in their
// order and verbatim. msgs is not modified. Without refs, or without an
// assistant message, msgs is returned as it is.
func withArtifacts(msgs []protocol.Message, refs []chat.ArtifactReference) ([]protocol.Message, error) {
	if len(refs) == 0 {
		return msgs, nil
	}
	return withAnswerMember(msgs, "artifacts", refs)
}

// withAnswerMember returns msgs with value placed in the metadata member
// name of the last assistant message, other metadata keys kept in their
// order and verbatim; msgs itself is not modified. Without an assistant
// message, msgs is returned as it is.
func withAnswerMember(msgs []protocol.Message, name string, value any) ([]protocol.Message, error) {
	last := -1
	for i := range msgs {
		if msgs[i].Role == protocol.RoleAssistant {
			last = i
		}
	}
	if last < 0 {
		return msgs, nil
	}
	b, err := marshal(value)
	if err != nil {
		return nil, err
	}
	md, err := setMember(msgs[last].Metadata, name, b)
	if err != nil {
		return nil, fmt.Errorf("message %d metadata: %w", last, err)
	}
	out := slices.Clone(msgs)
	out[last].Metadata = md
	return out, nil
}

// errMetadataNotObject reports stored metadata that is not a JSON object;
// the canonical message validator never lets one be stored.
var errMetadataNotObject = errors.New("metadata is not a JSON object")

// setMember returns the JSON object obj with member name set to value:
// replaced in place when present, appended otherwise. Empty or null obj is
// treated as {}. Other members keep their order and their bytes.
func setMember(obj json.RawMessage, name string, value []byte) (json.RawMessage, error) {
	key, err := marshal(name)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	out.WriteByte('{')
	written := false
	member := func(k, v []byte) {
		if out.Len() > 1 {
			out.WriteByte(',')
		}
		out.Write(k)
		out.WriteByte(':')
		out.Write(v)
	}
	if t := bytes.TrimSpace(obj); len(t) > 0 && !bytes.Equal(t, []byte("null")) {
		dec := json.NewDecoder(bytes.NewReader(t))
		if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
			return nil, errMetadataNotObject
		}
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return nil, err
			}
			k, ok := tok.(string)
			if !ok {
				return nil, errMetadataNotObject
			}
			var v json.RawMessage
			if err := dec.Decode(&v); err != nil {
				return nil, err
			}
			if k == name {
				if !written {
					member(key, value)
					written = true
				}
				continue
			}
			kb, err := marshal(k)
			if err != nil {
				return nil, err
			}
			member(kb, v)
		}
		if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
			return nil, errMetadataNotObject
		}
		if _, err := dec.Token(); err != io.EOF {
			return nil, errMetadataNotObject
		}
	}
	if !written {
		member(key, value)
	}
	out.WriteByte('}')
	return out.Bytes(), nil
}
