package storetest

import "testing"

func isolationCases() map[string]func(*testing.T, *env) { return nil }
func artifactCases() map[string]func(*testing.T, *env)  { return nil }
