package definition

import (
	"fmt"
	"strings"

	"github.com/turnstream/turnstream/pkg/chat"
)

// Config says where a process's definitions come from. pkg/config builds
// it from the environment (config.ModelConfig.Definitions).
type Config struct {
	// File is the path of a JSON definitions file (see Parse); empty means
	// the single definition Single.
	File string
	// DefaultID is the id of the definition new sessions get; with File
	// empty it is Single's id.
	DefaultID string
	// Single is the one definition used when File is empty; its ID is
	// DefaultID.
	Single Definition
	// DefaultQuotas are the deployment-wide default quotas (config
	// QUOTAS): each definition's quotas apply over them (Resolver.Quotas).
	DefaultQuotas chat.Quotas
}

// Load builds the process's Resolver from c: with c.File set, the file
// read with readFile (os.ReadFile) and parsed with Parse, default
// c.DefaultID; otherwise the single definition c.Single. knownTool is as
// for New. Errors wrap ErrInvalid and start with "DEFINITIONS_FILE" when
// the file is at fault, or name the environment variable that gives the
// field at fault (for example MODEL_TOOLS).
func Load(c Config, readFile func(string) ([]byte, error), knownTool func(name string) bool) (*Resolver, error) {
	if c.File == "" {
		d := c.Single
		d.ID = c.DefaultID
		r, err := New([]Definition{d}, c.DefaultID, knownTool)
		if err != nil {
			return nil, fmt.Errorf("%w (from %s)", err, envNames(err))
		}
		r.quotas = c.DefaultQuotas
		return r, nil
	}
	data, err := readFile(c.File)
	if err != nil {
		return nil, fmt.Errorf("%w: DEFINITIONS_FILE: cannot read the file: %w", ErrInvalid, err)
	}
	defs, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("DEFINITIONS_FILE: %w", err)
	}
	r, err := New(defs, c.DefaultID, knownTool)
	if err != nil {
		return nil, fmt.Errorf("DEFINITIONS_FILE: %w", err)
	}
	r.quotas = c.DefaultQuotas
	return r, nil
}

// DefaultQuotas returns the quotas of the definition new sessions get
// (Resolver.Quotas of c's default) without building a Resolver: for a
// function that shows quotas but runs no turn (the history function's
// GET /usage). The file, when c names one, is read and parsed (Parse),
// its tools not checked. Errors as Load's.
func DefaultQuotas(c Config, readFile func(string) ([]byte, error)) (chat.Quotas, error) {
	if c.File == "" {
		return c.DefaultQuotas, nil
	}
	data, err := readFile(c.File)
	if err != nil {
		return chat.Quotas{}, fmt.Errorf("%w: DEFINITIONS_FILE: cannot read the file: %w", ErrInvalid, err)
	}
	defs, err := Parse(data)
	if err != nil {
		return chat.Quotas{}, fmt.Errorf("DEFINITIONS_FILE: %w", err)
	}
	for _, d := range defs {
		if d.ID == c.DefaultID {
			return d.Quotas.Over(c.DefaultQuotas), nil
		}
	}
	return chat.Quotas{}, fmt.Errorf("%w: DEFINITION_ID: names no definition", ErrInvalid)
}

// envNames maps a New error about the environment's single definition to
// the variable at fault.
func envNames(err error) string {
	s := err.Error()
	for field, env := range map[string]string{
		".id:": "DEFINITION_ID", ".revision:": "DEFINITION_REVISION", ".provider:": "MODEL_PROVIDER",
		".modelId:": "MODEL_ID", ".tools[": "MODEL_TOOLS", ".approvalTools[": "MODEL_TOOLS", ".limits.maxSteps:": "MODEL_MAX_STEPS",
		".limits.maxTokens:": "MODEL_MAX_TOKENS",
	} {
		if strings.Contains(s, field) {
			return env
		}
	}
	return "the environment"
}
