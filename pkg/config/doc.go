// Package config turns the process environment into a typed Config shared
// by every Lambda main and the dev server (docs/design.md#configuration).
//
// The environment is the only source of configuration. It is read once:
// FromEnv parses os.LookupEnv on its first call and returns the same result
// afterwards, so a generated cursor secret is the same for the whole process.
// FromLookup parses any lookup function and is what tests use. Every error
// names the variable at fault and says what was expected, for example
// "TURN_TIMEOUT: not a duration"; it never repeats the value, which may be
// a secret.
//
// Durations accept Go syntax ("30s", "1m30s", "250ms") or a plain
// non-negative integer read as milliseconds ("250" is 250 ms).
//
// Variables lists every variable a deployment sets; RuntimeVariables lists
// the ones the Lambda runtime sets itself (AWS_REGION,
// AWS_LAMBDA_FUNCTION_NAME), which a SAM template must not set.
package config
