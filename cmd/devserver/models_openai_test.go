//go:build provider.openai

package main

import (
	"testing"

	"github.com/turnstream/turnstream/pkg/model/modeltest"
)

// TestRealModelsOpenAI: a dev server built with the openai provider
// (MODEL_PROVIDER=openai make dev builds it so) chats with an
// OpenAI-compatible server at OPENAI_BASE_URL, the fake here.
func TestRealModelsOpenAI(t *testing.T) {
	awsIsolated(t)
	reply := modeltest.Reply{Text: "Hello from the openai fake."}
	fake := modeltest.NewOpenAI(t, reply)
	realModelChat(t, map[string]string{"MODEL_PROVIDER": "openai", "MODEL_ID": modeltest.OpenAIModelID,
		"OPENAI_BASE_URL": fake.BaseURL(), "OPENAI_API_KEY": modeltest.OpenAIKey}, reply, fake.Requests)
}
