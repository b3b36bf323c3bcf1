package client

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"

	"github.com/turnstream/turnstream/pkg/protocol"
)

// ArtifactReference is a file a turn produced in the host's workspace
// (docs/design.md#history-and-artifacts-api): a relative EntryPath such as
// "notes/groceries.md" and its ArtifactType (document, webpage,
// presentation, spreadsheet or image).
type ArtifactReference struct {
	EntryPath    string `json:"entryPath"`
	ArtifactType string `json:"artifactType"`
}

// artifactList is the body of the artifacts routes.
type artifactList struct {
	Artifacts []ArtifactReference `json:"artifacts"`
}

// artifactsURL returns {base}sessions/{id}/turns/{turnId}/artifacts, base
// the client's ArtifactsURL.
func artifactsURL(base, sessionID, turnID string) (string, error) {
	if base == "" {
		return "", ErrNoURL
	}
	if !protocol.IsSafeID(sessionID) || !protocol.IsSafeID(turnID) {
		return "", ErrInvalidID
	}
	return joinURL(base, "/sessions/"+sessionID+"/turns/"+turnID+"/artifacts"), nil
}

// Artifacts returns a turn's artifact references, GET
// {ArtifactsURL}sessions/{id}/turns/{turnId}/artifacts.
func (c *Client) Artifacts(ctx context.Context, sessionID, turnID string) ([]ArtifactReference, error) {
	u, err := artifactsURL(c.opts.ArtifactsURL, sessionID, turnID)
	if err != nil {
		return nil, err
	}
	var l artifactList
	if err := c.getJSON(ctx, u, "artifacts", &l); err != nil {
		return nil, err
	}
	return l.Artifacts, nil
}

// PutArtifacts replaces a turn's artifact references (PUT, the trusted
// workspace host only: docs/security.md#the-trusted-artifacts-writer) and
// returns them as stored: one per entry path, the last one given winning.
// Another caller gets a KindHTTP *Error 403 REQUEST_FORBIDDEN.
func (c *Client) PutArtifacts(ctx context.Context, sessionID, turnID string, refs []ArtifactReference) ([]ArtifactReference, error) {
	u, err := artifactsURL(c.opts.ArtifactsURL, sessionID, turnID)
	if err != nil {
		return nil, err
	}
	if refs == nil {
		refs = []ArtifactReference{}
	}
	body, err := json.Marshal(artifactList{Artifacts: refs})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, u, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.send(req, "artifacts")
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	var l artifactList
	if json.NewDecoder(resp.Body).Decode(&l) != nil {
		return nil, invalidResponse("artifacts", resp.StatusCode)
	}
	return l.Artifacts, nil
}
