package definition

import (
	"fmt"

	"github.com/turnstream/turnstream/pkg/chat"
)

// Resolve returns the current definition of a session. sessionDefinitionID
// is the session's stored definition id, or "" for a new session, which
// gets the default definition. An id no definition has is
// ErrUnknownDefinition (the turn should refuse the turn, not switch the
// session to another definition).
func (r *Resolver) Resolve(sessionDefinitionID string) (Definition, error) {
	id := sessionDefinitionID
	if id == "" {
		id = r.defaultID
	}
	d, ok := r.byID[id]
	if !ok {
		return Definition{}, fmt.Errorf("%w: %q", ErrUnknownDefinition, sessionDefinitionID)
	}
	d.Tools = append([]string(nil), d.Tools...)
	d.ApprovalTools = append([]string(nil), d.ApprovalTools...)
	return d, nil
}

// Quotas returns the quotas of the sessions of definition id (a session's
// stored id; "" for the default): the definition's own over the
// deployment-wide default (Config.DefaultQuotas). An unknown id has the
// default's.
func (r *Resolver) Quotas(id string) chat.Quotas {
	if id == "" {
		id = r.defaultID
	}
	return r.byID[id].Quotas.Over(r.quotas)
}

// UniformQuotas returns the quotas every definition has, and false when
// definitions differ: a submit must then know its session's definition
// before its quotas are checked.
func (r *Resolver) UniformQuotas() (chat.Quotas, bool) {
	q := r.Quotas("")
	for _, id := range r.order {
		if r.Quotas(id) != q {
			return chat.Quotas{}, false
		}
	}
	return q, true
}

// Default returns the definition new sessions get.
func (r *Resolver) Default() Definition {
	d, _ := r.Resolve("")
	return d
}

// All returns every definition in configuration order (mains use it to
// build the providers the definitions name).
func (r *Resolver) All() []Definition {
	out := make([]Definition, 0, len(r.order))
	for _, id := range r.order {
		d, _ := r.Resolve(id)
		out = append(out, d)
	}
	return out
}
