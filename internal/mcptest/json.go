package mcptest

import (
	"encoding/json"
	"errors"
)

// jsonUnmarshal decodes a call's arguments (nil is an empty object).
func jsonUnmarshal(raw json.RawMessage, v any) error {
	if len(raw) == 0 {
		return errors.New("no arguments")
	}
	return json.Unmarshal(raw, v)
}
