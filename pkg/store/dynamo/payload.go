package dynamo

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"

	"github.com/turnstream/turnstream/pkg/protocol"
)

// Payload limits. A DynamoDB item holds at most 400 KB; the messages of a turn
// are stored inline as JSON up to compressAbove bytes, gzip-compressed inline
// up to inlineLimit bytes, and beyond that in chunk items of at most chunkSize
// bytes each (docs/design.md#storage-one-dynamodb-table: "split or compressed,
// never truncated").
const (
	compressAbove = 16 << 10
	inlineLimit   = 350_000
	chunkSize     = 350_000
)

// storedMessage is protocol.Message as stored: unlike the wire encoding,
// nil and empty slices stay distinct and absent JSON values stay absent,
// so that a turn reads back exactly as it was saved. JSON values
// (metadata, tool call arguments) are kept as compact JSON.
type storedMessage struct {
	ID         string           `json:"id"`
	Role       string           `json:"role"`
	Content    string           `json:"content"`
	Status     string           `json:"status"`
	CreatedAt  string           `json:"createdAt"`
	Parts      []protocol.Part  `json:"parts"`
	ToolCalls  []storedToolCall `json:"toolCalls"`
	ToolCallID *string          `json:"toolCallId,omitempty"`
	Metadata   json.RawMessage  `json:"metadata,omitempty"`
	// ReasoningBlocks, on a turn's last message only, are the turn's
	// chat.Turn.ReasoningBlocks: in the payload, which is compressed and
	// split as it grows, so that they never push the item past its limit.
	ReasoningBlocks json.RawMessage `json:"reasoningBlocks,omitempty"`
}

type storedToolCall struct {
	ID     string          `json:"id"`
	Name   string          `json:"name"`
	Args   json.RawMessage `json:"args,omitempty"`
	Status string          `json:"status"`
	Result *string         `json:"result,omitempty"`
	Error  *string         `json:"error,omitempty"`
}

// encodeMessages returns the stored JSON of msgs (nil stays null).
func encodeMessages(msgs []protocol.Message) ([]byte, error) {
	return encodePayload(msgs, nil)
}

// encodePayload returns the stored JSON of msgs with reasoning (a JSON
// value, nil for none) on the last message.
func encodePayload(msgs []protocol.Message, reasoning []byte) ([]byte, error) {
	var stored []storedMessage
	if msgs != nil {
		stored = make([]storedMessage, len(msgs))
		for i, m := range msgs {
			stored[i] = storedMessage{ID: m.ID, Role: m.Role, Content: m.Content, Status: m.Status,
				CreatedAt: m.CreatedAt, Parts: m.Parts, ToolCallID: m.ToolCallID, Metadata: m.Metadata}
			if m.ToolCalls != nil {
				stored[i].ToolCalls = make([]storedToolCall, len(m.ToolCalls))
				for j, c := range m.ToolCalls {
					stored[i].ToolCalls[j] = storedToolCall(c)
				}
			}
		}
	}
	if n := len(stored); n > 0 && len(reasoning) > 0 {
		stored[n-1].ReasoningBlocks = reasoning
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(stored); err != nil {
		return nil, fmt.Errorf("encode messages: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func decodeMessages(data []byte) ([]protocol.Message, error) {
	msgs, _, err := decodePayload(data)
	return msgs, err
}

// decodePayload decodes what encodePayload wrote: the messages and the
// reasoning blocks (nil when none).
func decodePayload(data []byte) ([]protocol.Message, []byte, error) {
	var stored []storedMessage
	if err := json.Unmarshal(data, &stored); err != nil {
		return nil, nil, fmt.Errorf("decode messages: %w", err)
	}
	if stored == nil {
		return nil, nil, nil
	}
	var reasoning []byte
	if n := len(stored); len(stored[n-1].ReasoningBlocks) > 0 {
		reasoning = stored[n-1].ReasoningBlocks
	}
	msgs := make([]protocol.Message, len(stored))
	for i, s := range stored {
		msgs[i] = protocol.Message{ID: s.ID, Role: s.Role, Content: s.Content, Status: s.Status,
			CreatedAt: s.CreatedAt, Parts: s.Parts, ToolCallID: s.ToolCallID, Metadata: s.Metadata}
		if s.ToolCalls != nil {
			msgs[i].ToolCalls = make([]protocol.ToolCall, len(s.ToolCalls))
			for j, c := range s.ToolCalls {
				msgs[i].ToolCalls[j] = protocol.ToolCall(c)
			}
		}
	}
	return msgs, reasoning, nil
}

func gzipBytes(data []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(data); err != nil {
		return nil, fmt.Errorf("compress messages: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("compress messages: %w", err)
	}
	return buf.Bytes(), nil
}

func gunzipBytes(data []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("decompress messages: %w", err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("decompress messages: %w", err)
	}
	return out, nil
}

// splitChunks splits data into parts of at most chunkSize bytes.
func splitChunks(data []byte) [][]byte {
	var parts [][]byte
	for len(data) > chunkSize {
		parts = append(parts, data[:chunkSize])
		data = data[chunkSize:]
	}
	return append(parts, data)
}
