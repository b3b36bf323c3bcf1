package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Component envelope constants (docs/protocol.md §7; docs/decisions.md D-0007).
const (
	ComponentProtocol = "agentskit.chat.component"
	ComponentVersion  = 1
)

// Component frame types (docs/protocol.md §7).
const (
	FrameRender = "render"
)

// Bounded JSON limits of component props and interaction values
// (docs/protocol.md §7): the root is depth 0 and node 1.
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

// RenderFrame is a component render frame (docs/protocol.md §7). Props is
// bounded JSON and required: JSON null is written as `null`, so a nil Props
// is invalid. Encoded key order: protocol, version, type, componentKey,
// instanceId, props, fallback.
type RenderFrame struct {
	ComponentKey string          // ^[a-z][a-z0-9-]{0,63}$
	InstanceID   string          // SafeId
	Props        json.RawMessage // bounded JSON, required
	Fallback     Fallback
}

// Fallback is a render frame's semantic fallback: Kind 1-64 and Summary
// 1-4,096 UTF-16 code units (docs/protocol.md §7).
type Fallback struct {
	Kind    string
	Summary string
}

// boundedOK reports whether n is bounded JSON (docs/protocol.md §7).
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
// decodeComponentFrame does (docs/protocol.md §7), in order: invalid JSON
// (strict reader, docs/design.md §2) → COMPONENT_INVALID_FRAME "Component frame is
// not valid JSON."; right protocol with a numeric version other than 1 →
// COMPONENT_UNSUPPORTED_VERSION; right protocol and a type other than
// render → COMPONENT_UNKNOWN_TYPE; any schema failure →
// COMPONENT_INVALID_FRAME "Component frame payload is invalid.". Unknown
// keys are dropped; a case variant of a field (IsCaseVariant) in the frame
// or its fallback is COMPONENT_INVALID_FRAME, checked first. Exactly one
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

// componentPrecheck applies steps 2-3 of docs/protocol.md §7; allowed lists
// the types the caller decodes.
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

// EncodeRenderFrame validates f (docs/protocol.md §7) and returns its compact
// JSON. Errors wrap ErrInvalidFrame and name the field.
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

// Manifest is a closed component manifest (docs/protocol.md §7, the chat
// layer): the registered component keys, each with a compiled JSON Schema
// for its props. A Manifest is immutable and safe for concurrent use.
type Manifest struct {
	schemas map[string]*jsonschema.Schema
}

// noRemoteLoader refuses every $ref outside the manifest's own documents,
// so compiling a manifest never touches the file system or network.
type noRemoteLoader struct{}

func (noRemoteLoader) Load(string) (any, error) {
	return nil, errors.New("protocol: manifest schemas may not reference external documents")
}

// NewManifest compiles a manifest from componentKey → JSON Schema document
// of that component's props (draft 2020-12 unless the document's $schema
// says otherwise). Keys must match ^[a-z][a-z0-9-]{0,63}$. Schemas may not
// $ref external documents. It returns an error naming the key whose schema
// does not compile.
func NewManifest(schemas map[string][]byte) (*Manifest, error) {
	keys := make([]string, 0, len(schemas))
	for k := range schemas {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	c := jsonschema.NewCompiler()
	c.UseLoader(noRemoteLoader{})
	m := &Manifest{schemas: make(map[string]*jsonschema.Schema, len(schemas))}
	for _, k := range keys {
		if !isLowerKey(k) {
			return nil, fmt.Errorf("protocol: manifest key %q is not a component key", k)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemas[k]))
		if err != nil {
			return nil, fmt.Errorf("protocol: manifest schema of %s: %w", k, err)
		}
		url := "urn:turnstream:component:" + k
		if err := c.AddResource(url, doc); err != nil {
			return nil, fmt.Errorf("protocol: manifest schema of %s: %w", k, err)
		}
		sch, err := c.Compile(url)
		if err != nil {
			return nil, fmt.Errorf("protocol: manifest schema of %s: %w", k, err)
		}
		m.schemas[k] = sch
	}
	return m, nil
}

// Has reports whether componentKey is registered.
func (m *Manifest) Has(componentKey string) bool {
	_, ok := m.schemas[componentKey]
	return ok
}

// Check validates a decoded render frame against the manifest: an
// unregistered key is COMPONENT_UNKNOWN ("Component is not registered."),
// props failing the key's schema COMPONENT_INVALID_PROPS ("Component props
// are invalid."). It returns nil when the frame is acceptable. Schema
// errors are never exposed.
func (m *Manifest) Check(f *RenderFrame) *Diagnostic {
	sch, ok := m.schemas[f.ComponentKey]
	if !ok {
		return componentDiag(CodeComponentUnknown, "")
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(f.Props))
	if err != nil || sch.Validate(inst) != nil {
		return componentDiag(CodeComponentInvalidProps, "")
	}
	return nil
}

// Resolve decodes an untrusted render frame (DecodeRenderFrame) and checks
// it against the manifest (Check), AgentsKit's resolveComponentFrame.
// Exactly one result is non-nil.
func (m *Manifest) Resolve(data []byte) (*RenderFrame, *Diagnostic) {
	f, d := DecodeRenderFrame(data)
	if d != nil {
		return nil, d
	}
	if d := m.Check(f); d != nil {
		return nil, d
	}
	return f, nil
}
