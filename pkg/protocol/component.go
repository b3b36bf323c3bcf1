package protocol

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
)

// Component envelope constants (docs/protocol.md#component-frames;
// docs/decisions.md D-0007).
const (
	ComponentProtocol = "agentskit.chat.component"
	ComponentVersion  = 1
)

// Component frame types (docs/protocol.md#component-frames).
const (
	FrameRender = "render"
)

// Bounded JSON limits of component props and interaction values
// (docs/protocol.md#component-frames): the root is depth 0 and node 1.
const (
	MaxBoundedNodes  = 1_000
	MaxBoundedDepth  = 20
	MaxBoundedString = 16_384 // UTF-16 code units of a string value
	MaxBoundedItems  = 1_000  // items of an array or keys of an object
	MaxBoundedKey    = 256    // UTF-16 code units of a key
)

// ErrInvalidFrame is wrapped by the component encoders when a frame breaks
// a wire rule; the wrapping error names the field.
var ErrInvalidFrame = errors.New("protocol: invalid component frame")

// RenderFrame is a component render frame (docs/protocol.md#component-frames).
// Props is bounded JSON and required: JSON null is written as `null`, so a nil
// Props is invalid. Encoded key order: protocol, version, type, componentKey,
// instanceId, props, fallback.
type RenderFrame struct {
	ComponentKey string          // ^[a-z][a-z0-9-]{0,63}$
	InstanceID   string          // SafeId
	Props        json.RawMessage // bounded JSON, required
	Fallback     Fallback
}

// Fallback is a render frame's semantic fallback: Kind 1-64 and Summary
// 1-4,096 UTF-16 code units (docs/protocol.md#component-frames).
type Fallback struct {
	Kind    string
	Summary string
}

// boundedOK reports whether n is bounded JSON
// (docs/protocol.md#component-frames).
func boundedOK(n *node) bool {
	count := 0
	var visit func(n *node, depth int) bool
	visit = func(n *node, depth int) bool {
		count++
		if count > MaxBoundedNodes || depth > MaxBoundedDepth {
			return false
		}
		switch n.kind {
		case kindString:
			return lenBetween(n.str, 0, MaxBoundedString)
		case kindNumber:
			return !math.IsInf(n.num, 0)
		case kindArray, kindObject:
			if len(n.kids) > MaxBoundedItems {
				return false
			}
			for i := range n.kids {
				if n.kind == kindObject && !lenBetween(n.kids[i].key, 0, MaxBoundedKey) {
					return false
				}
				if !visit(&n.kids[i], depth+1) {
					return false
				}
			}
		}
		return true
	}
	return visit(n, 0)
}

// The fields of a render frame and of its fallback, for the case-variant
// rule (IsCaseVariant).
var (
	renderFrameFields = []string{"protocol", "version", "type", "componentKey", "instanceId", "props", "fallback"}
	fallbackFields    = []string{"kind", "summary"}
)

func componentDiag(code, message string) *Diagnostic {
	d := NewDiagnostic(code)
	if message != "" {
		d.Message = message
	}
	return &d
}

// DecodeRenderFrame decodes an untrusted component frame as AgentsKit's
// decodeComponentFrame does (docs/protocol.md#component-frames), in order:
// invalid JSON (strict reader, docs/design.md#wire-protocol-v1) →
// COMPONENT_INVALID_FRAME "Component frame is not valid JSON."; right protocol
// with a numeric version other than 1 → COMPONENT_UNSUPPORTED_VERSION; right
// protocol and a type other than render → COMPONENT_UNKNOWN_TYPE; any schema
// failure → COMPONENT_INVALID_FRAME "Component frame payload is invalid.".
// Unknown keys are dropped; a case variant of a field (IsCaseVariant) in the
// frame or its fallback is COMPONENT_INVALID_FRAME, checked first. Exactly one
// result is non-nil.
func DecodeRenderFrame(data []byte) (*RenderFrame, *Diagnostic) {
	root, err := parseJSON(data)
	if err != nil {
		return nil, componentDiag(CodeComponentInvalidFrame, msgComponentFrameNotJSON)
	}
	if root.hasCaseVariant(renderFrameFields) {
		return nil, componentDiag(CodeComponentInvalidFrame, "")
	}
	if d := componentPrecheck(&root, FrameRender); d != nil {
		return nil, d
	}
	f, ok := renderFrameFromNode(&root)
	if !ok {
		return nil, componentDiag(CodeComponentInvalidFrame, "")
	}
	return f, nil
}

// componentPrecheck applies steps 2-3 of docs/protocol.md#component-frames;
// allowed lists the types the caller decodes.
func componentPrecheck(root *node, allowed ...string) *Diagnostic {
	if p, ok := strField(root, "protocol"); !ok || p != ComponentProtocol {
		return nil
	}
	if v, ok := root.get("version"); ok && v.kind == kindNumber && v.num != ComponentVersion {
		return componentDiag(CodeComponentUnsupportedVersion, "")
	}
	t, _ := root.get("type")
	for _, a := range allowed {
		if t != nil && t.kind == kindString && t.str == a {
			return nil
		}
	}
	return componentDiag(CodeComponentUnknownType, "")
}

func componentHeader(root *node, typ string) (key, instance string, ok bool) {
	if root.kind != kindObject {
		return "", "", false
	}
	if p, ok := strField(root, "protocol"); !ok || p != ComponentProtocol {
		return "", "", false
	}
	if v, ok := root.get("version"); !ok || v.kind != kindNumber || v.num != ComponentVersion {
		return "", "", false
	}
	if t, ok := strField(root, "type"); !ok || t != typ {
		return "", "", false
	}
	key, ok1 := strField(root, "componentKey")
	instance, ok2 := safeIDField(root, "instanceId")
	return key, instance, ok1 && ok2 && isLowerKey(key)
}

func renderFrameFromNode(root *node) (*RenderFrame, bool) {
	key, instance, ok := componentHeader(root, FrameRender)
	if !ok || root.hasCaseVariant(renderFrameFields) {
		return nil, false
	}
	props, ok := root.get("props")
	if !ok || !boundedOK(props) {
		return nil, false
	}
	fb, ok := root.get("fallback")
	if !ok || fb.kind != kindObject || fb.hasCaseVariant(fallbackFields) {
		return nil, false
	}
	kind, ok1 := strField(fb, "kind")
	summary, ok2 := strField(fb, "summary")
	if !ok1 || !ok2 || !lenBetween(kind, 1, 64) || !lenBetween(summary, 1, 4_096) {
		return nil, false
	}
	return &RenderFrame{
		ComponentKey: key,
		InstanceID:   instance,
		Props:        appendNode(nil, props),
		Fallback:     Fallback{Kind: kind, Summary: summary},
	}, true
}

func frameErr(field string) error { return fmt.Errorf("%w: %s", ErrInvalidFrame, field) }

// appendBounded parses raw strictly, checks it is bounded JSON and writes
// it in JSON.stringify form.
func appendBounded(b []byte, raw json.RawMessage) ([]byte, bool) {
	p := borrowParser(raw)
	defer p.release()
	n, err := p.parse()
	if err != nil || !boundedOK(&n) {
		return b, false
	}
	return appendNode(b, &n), true
}

func appendComponentHeader(b []byte, typ, key, instance string) ([]byte, error) {
	if !isLowerKey(key) {
		return b, frameErr("componentKey")
	}
	if !IsSafeID(instance) {
		return b, frameErr("instanceId")
	}
	b = append(b, `{"protocol":"agentskit.chat.component","version":1,"type":"`...)
	b = append(b, typ...)
	b = append(b, `","componentKey":"`...)
	b = append(b, key...)
	b = append(b, `","instanceId":"`...)
	b = append(b, instance...)
	return append(b, '"'), nil
}

// EncodeRenderFrame validates f (docs/protocol.md#component-frames) and
// returns its compact JSON. Errors wrap ErrInvalidFrame and name the field.
func EncodeRenderFrame(f *RenderFrame) ([]byte, error) {
	return appendRenderFrame(nil, f)
}

func appendRenderFrame(b []byte, f *RenderFrame) ([]byte, error) {
	b, err := appendComponentHeader(b, FrameRender, f.ComponentKey, f.InstanceID)
	if err != nil {
		return b, err
	}
	b = append(b, `,"props":`...)
	var ok bool
	if b, ok = appendBounded(b, f.Props); !ok {
		return b, frameErr("props")
	}
	if !lenBetween(f.Fallback.Kind, 1, 64) {
		return b, frameErr("fallback.kind")
	}
	if !lenBetween(f.Fallback.Summary, 1, 4_096) {
		return b, frameErr("fallback.summary")
	}
	b = append(b, `,"fallback":{"kind":`...)
	if b, ok = appendJSONString(b, f.Fallback.Kind); !ok {
		return b, frameErr("fallback.kind")
	}
	b = append(b, `,"summary":`...)
	if b, ok = appendJSONString(b, f.Fallback.Summary); !ok {
		return b, frameErr("fallback.summary")
	}
	return append(b, "}}"...), nil
}
