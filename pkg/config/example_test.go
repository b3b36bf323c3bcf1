package config_test

import (
	"fmt"

	"github.com/turnstream/turnstream/pkg/config"
)

func ExampleFromLookup() {
	vars := map[string]string{
		"TURN_TIMEOUT":      "20s",
		"SNAPSHOT_INTERVAL": "100", // plain integers are milliseconds
		"CURSOR_SECRET":     "a-secret-of-at-least-16-bytes",
	}
	c, err := config.FromLookup(func(k string) (string, bool) { v, ok := vars[k]; return v, ok })
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c.TurnTimeout, c.SnapshotInterval, c.Auth.Mode, c.Model.Provider)

	_, err = config.FromLookup(func(k string) (string, bool) {
		if k == "TURN_TIMEOUT" {
			return "soon", true
		}
		return "", false
	})
	fmt.Println(err)
	// Output:
	// 20s 100ms dev echo
	// TURN_TIMEOUT: not a duration (want Go syntax such as "30s" or integer milliseconds)
}
