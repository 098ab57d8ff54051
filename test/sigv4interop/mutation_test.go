package sigv4interop

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/duckicelake/duckicelake/sigv4"
)

// capture is a request that verified, ready to be replayed and mutated.
type capture struct {
	Name      string
	Wire      *wireRequest
	At        time.Time // the signed time; replays run at this instant
	Mode      sigv4.PayloadMode
	Presigned bool
	Checksum  string // the header checksum or trailer that protected the body
	Decoded   []byte
	Chunks    *awsChunked // Mode.Streaming()
}

// newCapture parses raw and replays it unmodified, which must verify.
func newCapture(name string, raw []byte) (*capture, error) {
	w, err := parseWire(raw)
	if err != nil {
		return nil, err
	}
	at, err := w.signedTime()
	if err != nil {
		return nil, fmt.Errorf("signed time: %w", err)
	}
	ex, err := w.replay(at)
	if err != nil {
		return nil, err
	}
	if ex.Err != nil {
		return nil, fmt.Errorf("unmodified replay: %w", ex.Err)
	}
	c := &capture{Name: name, Wire: w, At: at, Mode: ex.Mode, Presigned: ex.Presigned,
		Checksum: ex.Checksum, Decoded: ex.Decoded}
	if c.Mode.Streaming() {
		if c.Chunks, err = parseAWSChunked(w.Body); err != nil {
			return nil, fmt.Errorf("aws-chunked body: %w", err)
		}
	}
	return c, nil
}

// mutant is one modified replay and the error it must produce.
type mutant struct {
	Name string
	Wire *wireRequest
	At   time.Time
	Want sigv4.ErrorCode
	Or   sigv4.ErrorCode // a second acceptable code, where S3's choice is not known
}

// mutator derives zero or more mutants from a capture; not every mutation
// applies to every request (a GET has no body to change).
type mutator struct {
	Name   string
	Derive func(c *capture) []mutant
}

var (
	sdnm      = sigv4.ErrSignatureDoesNotMatch
	shaBad    = sigv4.ErrXAmzContentSHA256Mismatch
	badDigest = sigv4.ErrBadDigest
)

// one returns a single mutant of c made by f on a clone of its request.
func one(c *capture, name string, want sigv4.ErrorCode, f func(w *wireRequest)) []mutant {
	w := c.Wire.clone()
	f(w)
	return []mutant{{Name: name, Wire: w, At: c.At, Want: want}}
}

// bodyCode is the code a changed payload byte must produce in c's mode, or
// 0 when nothing protects the payload (UNSIGNED-PAYLOAD without a checksum).
func bodyCode(c *capture) sigv4.ErrorCode {
	switch c.Mode {
	case sigv4.PayloadSHA256:
		return shaBad
	case sigv4.PayloadStreamingSigned, sigv4.PayloadStreamingSignedTrailer:
		return sdnm // the chunk signature covers the chunk data
	case sigv4.PayloadStreamingUnsignedTrailer:
		return badDigest // only the trailing checksum covers it
	}
	if c.Checksum != "" {
		return badDigest
	}
	return 0
}

var mutators = []mutator{
	{"method", func(c *capture) []mutant {
		return one(c, "method", sdnm, func(w *wireRequest) { w.Method = flip(w.Method, len(w.Method)-1) })
	}},
	{"path", func(c *capture) []mutant {
		path, _, _ := strings.Cut(c.Wire.Target, "?")
		i := lastAlnum(path)
		if i < 0 {
			return nil
		}
		return one(c, "path", sdnm, func(w *wireRequest) { w.Target = flip(w.Target, i) })
	}},
	{"query", func(c *capture) []mutant {
		path, q, ok := strings.Cut(c.Wire.Target, "?")
		if !ok || q == "" {
			return nil
		}
		var out []mutant
		for off, kv := range splitOffsets(q, '&') {
			name, _, _ := strings.Cut(kv, "=")
			want := sdnm
			i := lastAlnum(kv)
			switch name {
			case "X-Amz-Algorithm", "X-Amz-SignedHeaders":
				continue // not a one-byte change with a single right answer
			case "X-Amz-Credential":
				i = strings.Index(kv, "%2F") - 1 // last byte of the access key id
				want = sigv4.ErrInvalidAccessKeyID
			case "X-Amz-Security-Token":
				want = sigv4.ErrInvalidToken
			case "X-Amz-Date":
				i = lastDigit(kv)
			}
			if i < 0 {
				continue
			}
			at := len(path) + 1 + off + i
			out = append(out, one(c, "query "+name, want, func(w *wireRequest) { w.Target = flip(w.Target, at) })...)
		}
		return out
	}},
	{"signed header", func(c *capture) []mutant {
		var out []mutant
		for _, name := range c.Wire.signedHeaders() {
			if name == "host" && c.Wire.get("host") < 0 {
				continue
			}
			v := c.Wire.value(name)
			i, want := lastAlnum(v), sdnm
			switch name {
			case "x-amz-date":
				i = lastDigit(v)
			case "x-amz-security-token":
				want = sigv4.ErrInvalidToken
			case "x-amz-content-sha256":
				if c.Mode != sigv4.PayloadSHA256 {
					want = sigv4.ErrInvalidArgument // no longer a known literal
				}
			}
			if i < 0 {
				continue
			}
			out = append(out, one(c, "header "+name, want, func(w *wireRequest) {
				j := w.get(name)
				w.Header[j].Value = flip(w.Header[j].Value, i)
			})...)
		}
		return out
	}},
	{"date skew", func(c *capture) []mutant {
		if c.Presigned {
			// A presigned URL is valid until X-Amz-Date + X-Amz-Expires.
			exp, _ := c.Wire.queryParam("X-Amz-Expires")
			var secs int
			fmt.Sscan(exp, &secs)
			late := c.At.Add(time.Duration(secs)*time.Second + time.Second)
			return []mutant{{Name: "presigned URL used after expiry", Wire: c.Wire, At: late, Want: sigv4.ErrAccessDenied}}
		}
		out := []mutant{{Name: "replayed 16 min later", Wire: c.Wire, At: c.At.Add(16 * time.Minute),
			Want: sigv4.ErrRequestTimeTooSkewed}}
		// x-amz-date an hour off, on the same day so the credential scope still matches.
		d := time.Hour
		if c.At.Hour() == 23 {
			d = -d
		}
		moved := c.At.Add(d).Format("20060102T150405Z")
		return append(out, one(c, "x-amz-date one hour off", sigv4.ErrRequestTimeTooSkewed, func(w *wireRequest) {
			w.Header[w.get("x-amz-date")].Value = moved
		})...)
	}},
	{"authorization", func(c *capture) []mutant {
		auth := c.Wire.value("authorization")
		if auth == "" {
			return nil
		}
		cred := strings.Index(auth, "Credential=") + len("Credential=")
		keyEnd := cred + strings.IndexByte(auth[cred:], '/')
		dateEnd := keyEnd + 9
		regionEnd := dateEnd + 1 + strings.IndexByte(auth[dateEnd+1:], '/')
		sig := strings.Index(auth, "Signature=") + len("Signature=")
		var out []mutant
		for _, m := range []struct {
			name string
			at   int
			want sigv4.ErrorCode
		}{
			{"Signature", sig + 10, sdnm},
			{"Credential access key", keyEnd - 1, sigv4.ErrInvalidAccessKeyID},
			{"Credential date", dateEnd - 1, sigv4.ErrAuthorizationHeaderMalformed},
			{"Credential region", regionEnd - 1, sigv4.ErrAuthorizationHeaderMalformed},
		} {
			out = append(out, one(c, "authorization "+m.name, m.want, func(w *wireRequest) {
				j := w.get("authorization")
				w.Header[j].Value = flip(w.Header[j].Value, m.at)
			})...)
		}
		return out
	}},
	{"body", func(c *capture) []mutant {
		want := bodyCode(c)
		if want == 0 || len(c.Decoded) == 0 {
			return nil
		}
		at := len(c.Wire.Body) / 2
		if c.Chunks != nil {
			at = c.Chunks.Chunks[0].DataStart + c.Chunks.Chunks[0].Size/2
		}
		return one(c, "payload byte", want, func(w *wireRequest) { w.Body[at] ^= 0x01 })
	}},
	{"chunk signature", func(c *capture) []mutant {
		if c.Chunks == nil || c.Chunks.Chunks[0].SigStart < 0 {
			return nil
		}
		var out []mutant
		first, last := c.Chunks.Chunks[0], c.Chunks.Chunks[len(c.Chunks.Chunks)-1]
		for _, f := range []struct {
			name string
			at   int
		}{{"first chunk signature", first.SigStart + 63}, {"final chunk signature", last.SigStart}} {
			out = append(out, one(c, f.name, sdnm, func(w *wireRequest) {
				w.Body = []byte(flip(string(w.Body), f.at))
			})...)
		}
		return out
	}},
	{"trailer", func(c *capture) []mutant {
		if c.Chunks == nil {
			return nil
		}
		signed := c.Mode == sigv4.PayloadStreamingSignedTrailer
		var out []mutant
		for _, tr := range c.Chunks.Trailers {
			value := string(c.Wire.Body[tr.ValueStart:tr.ValueEnd])
			if tr.Name == "x-amz-trailer-signature" {
				out = append(out, one(c, "trailer signature", sdnm, func(w *wireRequest) {
					w.Body = []byte(flip(string(w.Body), tr.ValueStart+10))
				})...)
				continue
			}
			// The checksum value: the signed trailer's signature covers it;
			// in the unsigned form only the checksum itself can catch it.
			want := badDigest
			if signed {
				want = sdnm
			}
			out = append(out, one(c, "trailer "+tr.Name+" value", want, func(w *wireRequest) {
				w.Body[tr.ValueStart] = base64Sibling(w.Body[tr.ValueStart])
			})...)
			// The last base64 digit before "=" padding also carries bits
			// that must be zero; changing only those leaves the decoded
			// digest alone but is no longer the canonical encoding, which
			// S3 refuses as a malformed value.
			if pad := strings.IndexByte(value, '='); pad > 0 {
				want, or := sigv4.ErrInvalidRequest, badDigest
				if signed {
					want, or = sdnm, 0
				}
				at := tr.ValueStart + pad - 1
				m := one(c, "trailer "+tr.Name+" padding bits", want, func(w *wireRequest) {
					w.Body[at] = base64Sibling(w.Body[at])
				})
				m[0].Or = or
				out = append(out, m...)
			}
		}
		return out
	}},
	{"truncated", func(c *capture) []mutant {
		if len(c.Wire.Body) == 0 || c.Mode == sigv4.PayloadUnsigned {
			return nil // an UNSIGNED-PAYLOAD body's length is HTTP's business
		}
		return one(c, "last byte missing", sigv4.ErrIncompleteBody, func(w *wireRequest) {
			w.Body = w.Body[:len(w.Body)-1]
		})
	}},
}

// base64Sibling returns the base64 digit that differs from c only in its
// lowest bit, which in the digit before "==" or "=" is a padding bit.
func base64Sibling(c byte) byte {
	const digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	i := strings.IndexByte(digits, c)
	return digits[i^1]
}

// splitOffsets splits s at sep and maps each part's offset to the part.
func splitOffsets(s string, sep byte) map[int]string {
	out := map[int]string{}
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == sep {
			out[start] = s[start:i]
			start = i + 1
		}
	}
	return out
}

// runMutations replays every mutant of c and checks its error code.
func runMutations(t *testing.T, c *capture) (n int) {
	t.Helper()
	for _, m := range mutators {
		for _, mu := range m.Derive(c) {
			n++
			ex, err := mu.Wire.replay(mu.At)
			if err != nil {
				t.Errorf("%s: %s: replay: %v", c.Name, mu.Name, err)
				continue
			}
			switch {
			case ex.Err == nil:
				t.Errorf("%s [%s]: %s: verified, want %s", c.Name, modeName(c.Mode), mu.Name, mu.Want)
			case sigv4.CodeOf(ex.Err) != mu.Want && (mu.Or == 0 || sigv4.CodeOf(ex.Err) != mu.Or):
				t.Errorf("%s [%s]: %s: got %v, want %s", c.Name, modeName(c.Mode), mu.Name, ex.Err, mu.Want)
			}
		}
	}
	return n
}

// TestMutations replays the committed captures of every client (including
// botocore's, so this runs without the venv) unmodified and with each
// one-byte mutation.
func TestMutations(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "captures", "*.http"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no captures in testdata/captures; run the round trips with -update")
	}
	modes := map[string]int{}
	total := 0
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(f)
		c, err := newCapture(name, raw)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		mode := modeName(c.Mode)
		if c.Presigned {
			mode = "presigned " + mode
		}
		modes[mode]++
		t.Run(strings.TrimSuffix(name, ".http"), func(t *testing.T) { total += runMutations(t, c) })
	}
	t.Logf("%d captures, %d mutants; captures per mode: %v", len(files), total, modes)
	// Every payload mode, and presigned auth, must be among the captures.
	for _, m := range []string{"UNSIGNED-PAYLOAD", "SHA256", sigv4.StreamingPayload, sigv4.StreamingPayloadTrailer,
		sigv4.StreamingUnsignedTrailer, "presigned UNSIGNED-PAYLOAD"} {
		if modes[m] == 0 {
			t.Errorf("no capture in mode %s", m)
		}
	}
}
