package turn

import "github.com/turnstream/turnstream/pkg/turn/engine"

// The engine's names a handler's users need, declared once in
// pkg/turn/engine and named here too, so that configuring and reading the
// turn function needs only this package. Each keeps its engine doc
// comment.

// Defaults applied to zero Options fields (engine.Config).
const (
	DefaultTurnTimeout            = engine.DefaultTurnTimeout
	DefaultCleanupReserve         = engine.DefaultCleanupReserve
	DefaultLeaseDuration          = engine.DefaultLeaseDuration
	DefaultSnapshotInterval       = engine.DefaultSnapshotInterval
	DefaultSnapshotBytesPerSecond = engine.DefaultSnapshotBytesPerSecond
	DefaultMaxSnapshotGap         = engine.DefaultMaxSnapshotGap
	DefaultResumePollInterval     = engine.DefaultResumePollInterval
	DefaultCompactLineSpan        = engine.DefaultCompactLineSpan
	DefaultInterruptWait          = engine.DefaultInterruptWait
)

// AttachmentSource is the prefix of an attachment part's source,
// "attachment:<id>" (engine.AttachmentSource, docs/attachments.md).
const AttachmentSource = engine.AttachmentSource

// ImageTokens is what one image counts for in the context budget
// (engine.ImageTokens, docs/attachments.md).
const ImageTokens = engine.ImageTokens

// The AG-UI routes and their pacing (engine.AGUIPath and the others).
const (
	AGUIPath                 = engine.AGUIPath
	AGUIRunPath              = engine.AGUIRunPath
	AGUILastEventIDParameter = engine.AGUILastEventIDParameter
	AGUITextGap              = engine.AGUITextGap
)

// What a turn's assistant message says about itself: its metadata
// members and the texts of tool calls that did not run
// (engine.MetadataLimit and the others).
const (
	MetadataLimit          = engine.MetadataLimit
	MetadataContext        = engine.MetadataContext
	MetadataOrderedContent = engine.MetadataOrderedContent
	MetadataToolRounds     = engine.MetadataToolRounds
	MetadataUsageEstimate  = engine.MetadataUsageEstimate
	ScopeTurn              = engine.ScopeTurn
	BudgetOutputTokens     = engine.BudgetOutputTokens
	BudgetToolCalls        = engine.BudgetToolCalls
	BudgetWallTime         = engine.BudgetWallTime
	BudgetSteps            = engine.BudgetSteps
	TextLimitReached       = engine.TextLimitReached
	TextRepeatedCallID     = engine.TextRepeatedCallID
	TextStepLimit          = engine.TextStepLimit
	TextDenied             = engine.TextDenied
	TextNotApproved        = engine.TextNotApproved
	TextCannotAwait        = engine.TextCannotAwait
)

// Definition is the single definition of the simple configuration path
// (engine.Definition).
type Definition = engine.Definition

// DrainRequest asks Handler.Drain to run a session's queued turns
// (engine.DrainRequest).
type DrainRequest = engine.DrainRequest

// MessageID is the id of a turn's message at position (engine.MessageID).
func MessageID(turnID, position string) string { return engine.MessageID(turnID, position) }

// PlainText is what a model sees of assistant content (engine.PlainText).
func PlainText(content string) string { return engine.PlainText(content) }
