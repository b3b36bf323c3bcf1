package openai_test

import (
	"github.com/turnstream/turnstream/pkg/config"
	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/model/openai"
)

// A main builds the provider from OPENAI_BASE_URL and OPENAI_API_KEY.
func ExampleNew() {
	cfg, err := config.FromLookup(func(name string) (string, bool) {
		env := map[string]string{"MODEL_PROVIDER": "openai", "MODEL_ID": "llama3.1", "OPENAI_BASE_URL": "http://127.0.0.1:11434/v1/"}
		v, ok := env[name]
		return v, ok
	})
	if err != nil {
		panic(err)
	}
	var m model.Model = openai.New(cfg.Model.OpenAIBaseURL, cfg.Model.OpenAIAPIKey)
	_ = m // pass to the turn handler; requests use the definition's model id
}
