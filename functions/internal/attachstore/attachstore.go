// Package attachstore builds the attachment store of a function's
// configuration (ATTACHMENTS_BUCKET) for the history and artifacts
// functions. It is apart from functions/internal/startup so that only the
// functions that sign or delete attachments link the S3 client.
package attachstore

import (
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/turnstream/turnstream/functions/internal/startup"
	"github.com/turnstream/turnstream/pkg/attach"
	"github.com/turnstream/turnstream/pkg/attach/s3attach"
	"github.com/turnstream/turnstream/pkg/awsenv"
	"github.com/turnstream/turnstream/pkg/config"
)

// FromConfig returns the attachment store of cfg: an attach.S3 on
// ATTACHMENTS_BUCKET through an S3 client configured from the environment
// (pkg/awsenv; path-style addressing when AWS_ENDPOINT_URL_S3 or
// AWS_ENDPOINT_URL names a local server), nil when no bucket is set.
func FromConfig(cfg config.Config) (attach.Store, error) {
	if cfg.AttachmentsBucket == "" {
		return nil, nil
	}
	awsCfg, err := awsenv.Config(cfg.Region)
	if err != nil {
		return nil, fmt.Errorf("s3 client: %w", err)
	}
	local := startup.S3Endpoint() != ""
	client := s3.NewFromConfig(awsCfg, func(o *s3.Options) { o.UsePathStyle = local })
	return s3attach.NewS3(client, cfg.AttachmentsBucket), nil
}
