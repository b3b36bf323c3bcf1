//go:build !provider.openai

package main

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/turnstream/turnstream/internal/devserver"
)

// TestOpenAINotBuiltIn: a dev server built without the openai provider
// refuses MODEL_PROVIDER=openai at start, saying how to get it.
func TestOpenAINotBuiltIn(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	env := map[string]string{"MODEL_PROVIDER": "openai", "MODEL_ID": "m", "OPENAI_BASE_URL": "http://127.0.0.1:1/v1/"}
	if err := run(ctx, nil, lookup(env), io.Discard); !errors.Is(err, devserver.ErrOpenAINotBuiltIn) {
		t.Fatalf("run error = %v, want ErrOpenAINotBuiltIn", err)
	}
}
