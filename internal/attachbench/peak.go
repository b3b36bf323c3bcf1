package attachbench

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/turnstream/turnstream/internal/coldstart"
	"github.com/turnstream/turnstream/pkg/attach"
	"github.com/turnstream/turnstream/pkg/attach/s3read"
	"github.com/turnstream/turnstream/pkg/client"
)

// PeakBucket is the bucket MeasurePeak creates on its S3 API server.
const PeakBucket = "turnbench-attachments"

// PeakEnv is what MeasurePeak runs on.
type PeakEnv struct {
	// RIE is the aws-lambda-rie binary and Bootstrap the turn function's
	// bootstrap (a release build for the host).
	RIE, Bootstrap string
	// Endpoint and Table are the DynamoDB API server and its table.
	Endpoint, Table string
	// S3 is an S3 API server's base URL (moto_server): the turn function
	// reads the attachments there (AWS_ENDPOINT_URL_S3), path-style.
	S3 string
	// Prefix makes the run's sessions its own.
	Prefix string
	// Quick runs 2 processes of each kind instead of 5.
	Quick    bool
	Progress func(format string, a ...any)
}

// PeakTurns is how many turns each process serves before its peak is
// read: a warm sandbox serves more than one.
const PeakTurns = 3

// Peak is the turn function's peak resident memory (VmHWM, KiB), one
// entry per process: the figure Lambda reports as "Max Memory Used".
type Peak struct {
	Processes    int
	Plain, Image []int64
}

// MeasurePeak runs the turn bootstrap under the emulator, a fresh process
// for each measurement, alternating: a process that serves PeakTurns
// turns without an attachment, then one that serves PeakTurns turns each
// with one ImageBytes image (uploaded to e.S3 beforehand, as the signed
// form would, so that the turn reads it: HEAD, then GET of the whole
// file). Each process's VmHWM after its last turn is one figure.
func MeasurePeak(ctx context.Context, e PeakEnv) (*Peak, error) {
	n := 5
	if e.Quick {
		n = 2
	}
	if err := createBucket(ctx, e.S3, PeakBucket); err != nil {
		return nil, err
	}
	store := &s3read.Reader{Bucket: PeakBucket, Region: "us-east-1", Endpoint: e.S3,
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "AKIATURNBENCH", SecretAccessKey: "turnbench"}, nil
		})}
	env := append(coldstart.FunctionEnv(e.Endpoint, e.Table, 0), "ATTACHMENTS_BUCKET="+PeakBucket, "AWS_ENDPOINT_URL_S3="+e.S3)
	owner := attach.Owner(coldstart.CallerTenant, coldstart.CallerSubject)
	img := Image()
	p := &Peak{Processes: n}
	for i := range n {
		for _, image := range []bool{false, true} {
			e.Progress("attachments: memory peak, process %d of %d of each kind", i+1, n)
			kib, err := peakOf(ctx, e, env, func(turn int) (string, string, error) {
				sid := fmt.Sprintf("%s-peak-%d-%t-%d", e.Prefix, i, image, turn)
				s := client.Submit{SessionID: sid, TurnID: "t", EventID: "e", Input: Input}
				if image {
					id := attach.NewID()
					obj := attach.Object{Key: attach.Key(owner, sid, id), MediaType: "image/png", Size: int64(len(img)),
						Filename: "picture.png", UseBy: time.Now().Add(attach.UseWithin)}
					if err := store.Put(ctx, obj, img); err != nil {
						return "", "", fmt.Errorf("upload: %w", err)
					}
					s.Attachments = []string{id}
				}
				body, err := client.SubmitBody(s)
				if image {
					return string(body), "picture.png", err // the echo model names the file it received
				}
				return string(body), "", err
			})
			if err != nil {
				return nil, fmt.Errorf("memory peak (image %t): %w", image, err)
			}
			if image {
				p.Image = append(p.Image, kib)
			} else {
				p.Plain = append(p.Plain, kib)
			}
		}
	}
	return p, nil
}

// peakOf starts the bootstrap, has it serve PeakTurns submits to
// completion and returns its VmHWM in KiB. submit gives turn i's body and
// a string its answer must hold ("" for none).
func peakOf(ctx context.Context, e PeakEnv, env []string, submit func(i int) (body, want string, err error)) (int64, error) {
	em, err := coldstart.StartEmulator(coldstart.EmulatorOptions{RIE: e.RIE, Bootstrap: e.Bootstrap, Env: env})
	if err != nil {
		return 0, err
	}
	defer em.Stop()
	c := &http.Client{Timeout: 2 * time.Minute}
	for i := range PeakTurns {
		b, want, err := submit(i)
		if err != nil {
			return 0, err
		}
		inv, err := em.Invoke(ctx, c, coldstart.URLEvent("POST", "/", "", b))
		if err != nil {
			return 0, err
		}
		if inv.Status != http.StatusOK || !bytes.Contains(inv.Body, []byte(`"status":"complete"`)) || !bytes.Contains(inv.Body, []byte(want)) {
			return 0, fmt.Errorf("turn %d: status %d, body %.300q", i, inv.Status, inv.Body)
		}
	}
	_, _, pid, err := em.ColdStart()
	if err != nil {
		return 0, err
	}
	return coldstart.VmHWM(pid)
}

// createBucket creates bucket on the S3 API server at endpoint with an
// unsigned path-style PUT (moto_server accepts one); a bucket that is
// there already is fine.
func createBucket(ctx context.Context, endpoint, bucket string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, endpoint+"/"+bucket, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("create bucket: %w", err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusConflict {
		return fmt.Errorf("create bucket: status %d", resp.StatusCode)
	}
	return nil
}

// rows are the memory peak's table rows (Result.Rows): what, image
// turns, plain turns, ratio; a note of why when it did not run.
func (p *Peak) rows(skipped string) [][4]string {
	if p == nil {
		if skipped == "" {
			return nil
		}
		return [][4]string{{"turn function's peak memory under the emulator: not measured (" + skipped + ")", "-", "-", "-"}}
	}
	pi, pp := Median(p.Image), Median(p.Plain)
	ratio := "-"
	if pp > 0 {
		ratio = fmt.Sprintf("%.2f×", float64(pi)/float64(pp))
	}
	return [][4]string{{fmt.Sprintf("turn function's peak memory (VmHWM, what Lambda reports as Max Memory Used) after %d turns, median of %d processes each", PeakTurns, p.Processes),
		fmt.Sprintf("%.1f MiB", float64(pi)/1024), fmt.Sprintf("%.1f MiB", float64(pp)/1024), ratio}}
}
