// Package sessionapi serves a session's history and its turns' artifact
// references over HTTP: the handlers of the history and artifacts functions
// (docs/design.md#the-three-functions, docs/design.md#history-and-artifacts-api).
//
// NewHistoryHandler serves GET /sessions/{id} (a session summary with its
// running turn), GET /sessions/{id}/turns (pages of turns) and
// GET /sessions/{id}/messages (the same pages flattened to canonical message
// records). NewArtifactsHandler serves PUT and GET
// /sessions/{id}/turns/{turnId}/artifacts. Both are plain http.Handlers
// behind a Lambda function URL in BUFFERED mode; NewFunctionURLHandler
// adapts one to the function URL event (payload format 2.0) with
// aws-lambda-go-api-proxy's httpadapter.
//
// Every request is authenticated from its headers before any body byte is read
// (docs/design.md#the-turn-pipeline,
// docs/design.md#authentication-and-tenancy). Sessions are visible only to
// their owner; a session owned by someone else is indistinguishable from a
// missing one (404 SESSION_NOT_FOUND). Artifact writes need the trusted host
// principal (one tenant and subject, see auth.Config.TrustedPrincipal), and
// only on sessions of its own tenant: another tenant's session is 404 to it
// too.
//
// Every response is JSON with "cache-control: no-store". Errors use
// AgentsKit's HTTP error shape {"error":{"version":1,"code","message",
// "retryable"}} with fixed messages; domain and request errors are mapped to
// codes and statuses in the one table of the HTTP edge shared with the turn
// function (pkg/httpedge, which also holds the media-type rule and the
// body cap), and neither request input
// nor the text of an internal error ever reaches a client. Each request is
// logged once as JSON (log/slog) with the Lambda request id, the route and
// the session id; message text is never logged.
package sessionapi
