package storetest

import "testing"

func historyCases() map[string]func(*testing.T, *env)   { return nil }
func isolationCases() map[string]func(*testing.T, *env) { return nil }
func artifactCases() map[string]func(*testing.T, *env)  { return nil }
