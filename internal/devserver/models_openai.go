//go:build provider.openai

package devserver

import (
	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/model/openai"
)

// The openai provider, built in with the build tag provider.openai
// (models.go).
func init() {
	openAIModel = func(baseURL, apiKey string) model.Model { return openai.New(baseURL, apiKey) }
}
