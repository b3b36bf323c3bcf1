package sessionapi

import (
	"fmt"
	"net/http"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/httpedge"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// ArtifactList is the body of a PUT request and of both responses on
// /sessions/{id}/turns/{turnId}/artifacts
// (docs/design.md#history-and-artifacts-api; agent UI protocol 0.7
// ArtifactReference):
//
//	{"artifacts":[{"entryPath":"reports/index.html","artifactType":"webpage"}]}
//
// A response's list is the stored collection: deduplicated by entryPath,
// the last reference for a repeated path winning at the position of its
// first occurrence, [] when empty.
type ArtifactList struct {
	Artifacts []chat.ArtifactReference `json:"artifacts"`
}

// artifactsBody is the strict shape of a PUT body. Pointers tell a missing
// or null member (invalid) from a present one.
type artifactsBody struct {
	Artifacts *[]artifactRef `json:"artifacts"`
}

type artifactRef struct {
	EntryPath    *string `json:"entryPath"`
	ArtifactType *string `json:"artifactType"`
}

// artifacts serves PUT and GET /sessions/{id}/turns/{turnId}/artifacts.
//
// PUT checks, in order (docs/design.md#the-turn-pipeline): method, content
// type (415), authentication before any body byte is read (401/403), the
// trusted principal (403), path ids (404), the body cap (413), the body's
// shape (400 REQUEST_INVALID_BODY), the references' values (400
// ARTIFACTS_INVALID), then one store write. Nothing is stored unless every
// check passes.
func (s *server) artifacts(w http.ResponseWriter, r *http.Request, rc *requestContext) error {
	if err := httpedge.RequireMethod(w, r, http.MethodGet, http.MethodPut); err != nil {
		return err
	}
	if r.Method == http.MethodPut {
		return s.putArtifacts(w, r, rc)
	}
	return s.getArtifacts(w, r, rc)
}

func (s *server) getArtifacts(w http.ResponseWriter, r *http.Request, rc *requestContext) error {
	p, err := s.principal(r)
	if err != nil {
		return err
	}
	sid, tid, err := turnPath(r, rc)
	if err != nil {
		return err
	}
	refs, err := s.store.GetArtifacts(r.Context(), sid, tid, p)
	if err != nil {
		return fmt.Errorf("get artifacts: %w", err)
	}
	return writeJSON(w, artifactList(refs))
}

func (s *server) putArtifacts(w http.ResponseWriter, r *http.Request, rc *requestContext) error {
	if err := httpedge.RequireJSON(r); err != nil {
		return err
	}
	p, err := s.principal(r)
	if err != nil {
		return err
	}
	if !p.Trusted {
		return errNotTrusted
	}
	sid, tid, err := turnPath(r, rc)
	if err != nil {
		return err
	}
	body, err := httpedge.ReadBody(r.Context(), w, r, s.maxBody, httpedge.ErrInvalidBody)
	if err != nil {
		return err
	}
	refs, err := decodeArtifacts(body)
	if err != nil {
		return err
	}
	if err := chat.ValidateArtifacts(refs); err != nil {
		return err
	}
	stored, err := s.store.PutArtifacts(r.Context(), sid, tid, p, refs)
	if err != nil {
		return fmt.Errorf("put artifacts: %w", err)
	}
	return writeJSON(w, artifactList(stored))
}

func artifactList(refs []chat.ArtifactReference) ArtifactList {
	if refs == nil {
		refs = []chat.ArtifactReference{}
	}
	return ArtifactList{Artifacts: refs}
}

// turnPath returns the validated {id} and {turnId} path values.
func turnPath(r *http.Request, rc *requestContext) (sid, tid string, err error) {
	if sid, err = sessionID(r, rc); err != nil {
		return "", "", err
	}
	if tid, err = turnID(r, rc); err != nil {
		return "", "", err
	}
	return sid, tid, nil
}

// decodeArtifacts decodes a PUT body with the strict reader
// (protocol.UnmarshalStrict, unknown members rejected): exactly one JSON object with
// the single member "artifacts", an array (not null) of objects with exactly
// the string members entryPath and artifactType. Names match
// case-sensitively; a duplicated name at any depth, an unknown member (the
// legacy {"id"} reference among them, and any case variant of a field such
// as "EntryPath", see protocol.IsCaseVariant), a missing or null member, a wrong
// type, invalid UTF-8, a lone surrogate escape or trailing data is
// httpedge.ErrInvalidBody. Values are checked afterwards by chat.ValidateArtifacts.
func decodeArtifacts(body []byte) ([]chat.ArtifactReference, error) {
	var in artifactsBody
	if err := protocol.UnmarshalStrict(body, &in, protocol.RejectUnknownMembers); err != nil {
		return nil, httpedge.ErrInvalidBody
	}
	if in.Artifacts == nil {
		return nil, httpedge.ErrInvalidBody
	}
	refs := make([]chat.ArtifactReference, 0, len(*in.Artifacts))
	for _, a := range *in.Artifacts {
		if a.EntryPath == nil || a.ArtifactType == nil {
			return nil, httpedge.ErrInvalidBody
		}
		refs = append(refs, chat.ArtifactReference{
			EntryPath:    *a.EntryPath,
			ArtifactType: chat.ArtifactType(*a.ArtifactType),
		})
	}
	return refs, nil
}
