package tool

import (
	"bytes"
	"fmt"
	"sort"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/turnstream/turnstream/pkg/protocol"
)

// Manifest is a closed component manifest (docs/protocol.md#component-frames,
// the chat layer): the registered component keys, each with a compiled JSON
// Schema for its props, which tool render frames must pass (NewRegistry). It
// lives here, where the frames are checked, so that only the turn function
// links a JSON Schema library. A Manifest is immutable and safe for concurrent
// use.
type Manifest struct {
	schemas map[string]*jsonschema.Schema
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
	c.UseLoader(noRemoteLoader{"manifest schemas"})
	m := &Manifest{schemas: make(map[string]*jsonschema.Schema, len(schemas))}
	for _, k := range keys {
		if !protocol.IsComponentKey(k) {
			return nil, fmt.Errorf("tool: manifest key %q is not a component key", k)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemas[k]))
		if err != nil {
			return nil, fmt.Errorf("tool: manifest schema of %s: %w", k, err)
		}
		url := "urn:turnstream:component:" + k
		if err := c.AddResource(url, doc); err != nil {
			return nil, fmt.Errorf("tool: manifest schema of %s: %w", k, err)
		}
		sch, err := c.Compile(url)
		if err != nil {
			return nil, fmt.Errorf("tool: manifest schema of %s: %w", k, err)
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
func (m *Manifest) Check(f *protocol.RenderFrame) *protocol.Diagnostic {
	sch, ok := m.schemas[f.ComponentKey]
	if !ok {
		return diagnostic(protocol.CodeComponentUnknown)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(f.Props))
	if err != nil || sch.Validate(inst) != nil {
		return diagnostic(protocol.CodeComponentInvalidProps)
	}
	return nil
}

// Resolve decodes an untrusted render frame (protocol.DecodeRenderFrame) and checks
// it against the manifest (Check), AgentsKit's resolveComponentFrame.
// Exactly one result is non-nil.
func (m *Manifest) Resolve(data []byte) (*protocol.RenderFrame, *protocol.Diagnostic) {
	f, d := protocol.DecodeRenderFrame(data)
	if d != nil {
		return nil, d
	}
	if d := m.Check(f); d != nil {
		return nil, d
	}
	return f, nil
}

// diagnostic is code's diagnostic, as a pointer.
func diagnostic(code string) *protocol.Diagnostic {
	d := protocol.NewDiagnostic(code)
	return &d
}
