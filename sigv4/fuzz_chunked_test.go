package sigv4

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"io"
	"strconv"
	"strings"
	"testing"
)

// Fuzz configuration, selected by the sel argument:
// bits 0-2 the declared trailer (0 none, 1-5 allTrailerAlgorithms),
// bits 3-4 the seed signature (fuzzSeeds), bit 7 read through WriteTo.
var fuzzSeeds = [4]string{
	strings.Repeat("0", 64),
	"4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9",
	"106e2a8a18243abcf37539882f36619c00e2dfc72633413f02d3b74544bfeb8e",
	strings.Repeat("0", 64),
}

const fuzzMaxChunk = 1 << 20

func fuzzConfig(t testing.TB, signed bool, declared int32, sel uint8) *ChunkedConfig {
	cfg := &ChunkedConfig{
		Signed:        signed,
		SigningKey:    vecKey(),
		AmzDate:       []byte(vecAmzDate),
		Scope:         []byte(vecScope),
		SeedSignature: mustHex32(t, fuzzSeeds[sel>>3&3]),
		DecodedLength: int64(declared),
		MaxChunkSize:  fuzzMaxChunk,
	}
	if declared < 0 {
		cfg.DecodedLength = -1
	}
	if a := sel & 7; a >= 1 && a <= 5 {
		cfg.Trailer = []byte(allTrailerAlgorithms[a-1].HeaderName())
	}
	return cfg
}

func fuzzSel(trailer ChecksumAlgorithm, seed int, writeTo bool) uint8 {
	sel := uint8(seed) << 3
	for i, a := range allTrailerAlgorithms {
		if a == trailer {
			sel |= uint8(i + 1)
		}
	}
	if writeTo {
		sel |= 0x80
	}
	return sel
}

// addFuzzSeeds adds the AWS example bodies and small streams of every kind.
func addFuzzSeeds(f *testing.F, signed bool) {
	payload := []byte("Hello, aws-chunked world! 0123456789")
	for _, a := range append([]ChecksumAlgorithm{0}, allTrailerAlgorithms...) {
		for _, sizes := range [][]int{nil, {1}, {10, 10}} {
			b := buildStream(f, chunkStream{signed: signed, payload: payload, sizes: sizes, trailer: a})
			f.Add(b.wire, int32(len(payload)), fuzzSel(a, 0, false))
			f.Add(b.wire, int32(-1), fuzzSel(a, 0, true))
		}
	}
	empty := buildStream(f, chunkStream{signed: signed, trailer: ChecksumCRC32C})
	f.Add(empty.wire, int32(0), fuzzSel(ChecksumCRC32C, 0, false))
	big := repeatA(66560)
	if signed {
		b := buildStream(f, chunkStream{signed: true, payload: big, sizes: []int{65536}, seed: fuzzSeeds[1]})
		f.Add(b.wire, int32(len(big)), fuzzSel(0, 1, false))
		b = buildStream(f, chunkStream{signed: true, payload: big, sizes: []int{65536}, seed: fuzzSeeds[2], trailer: ChecksumCRC32C})
		f.Add(b.wire, int32(len(big)), fuzzSel(ChecksumCRC32C, 2, true))
	} else {
		b := buildStream(f, chunkStream{payload: big, sizes: []int{65536}, trailer: ChecksumCRC32C})
		f.Add(b.wire, int32(len(big)), fuzzSel(ChecksumCRC32C, 0, false))
		// minio-go's trailer dialect.
		b = buildStream(f, chunkStream{payload: payload, trailer: ChecksumCRC32})
		f.Add(bytes.Replace(b.wire, []byte("==\r\n"), []byte("==\n\r\n"), 1), int32(len(payload)), fuzzSel(ChecksumCRC32, 0, false))
	}
}

func FuzzChunkedSigned(f *testing.F) {
	addFuzzSeeds(f, true)
	f.Fuzz(func(t *testing.T, wire []byte, declared int32, sel uint8) {
		checkAgainstReference(t, wire, fuzzConfig(t, true, declared, sel), sel&0x80 != 0)
	})
}

func FuzzChunkedUnsignedTrailer(f *testing.F) {
	addFuzzSeeds(f, false)
	f.Fuzz(func(t *testing.T, wire []byte, declared int32, sel uint8) {
		checkAgainstReference(t, wire, fuzzConfig(t, false, declared, sel), sel&0x80 != 0)
	})
}

// checkAgainstReference decodes wire with the streaming reader and with
// referenceDecode: they must agree on success and on the payload, and the
// reader must never yield more than DecodedLength bytes.
func checkAgainstReference(t *testing.T, wire []byte, cfg *ChunkedConfig, writeTo bool) {
	var got []byte
	var err error
	if writeTo {
		got, err = decodeWriteTo(bytes.NewReader(wire), cfg)
	} else {
		// Small reads from both sides exercise every buffer boundary.
		r := NewChunkedReader(&zeroReads{r: bytes.NewReader(wire)}, cfg)
		got, err = io.ReadAll(struct{ io.Reader }{r})
	}
	if cfg.DecodedLength >= 0 && int64(len(got)) > cfg.DecodedLength {
		t.Fatalf("yielded %d bytes, decoded length %d", len(got), cfg.DecodedLength)
	}
	if err != nil {
		if _, ok := err.(*Error); !ok {
			t.Fatalf("error %T %v is not an *Error", err, err)
		}
	}
	want, refErr := referenceDecode(wire, cfg)
	switch {
	case err == nil && refErr != nil:
		t.Fatalf("reader accepted what the reference rejects (%v)", refErr)
	case err != nil && refErr == nil:
		t.Fatalf("reader rejected what the reference accepts: %v", err)
	case err == nil && !bytes.Equal(got, want):
		t.Fatalf("reader yielded %q, reference %q", got, want)
	}
}

type refError string

func (e refError) Error() string { return string(e) }

// referenceDecode is a second, whole-buffer implementation of the rules
// ChunkedReader follows, written without its helpers.
func referenceDecode(wire []byte, cfg *ChunkedConfig) (out []byte, err error) {
	sg := &refSigner{key: cfg.SigningKey, date: string(cfg.AmzDate), scop: string(cfg.Scope), prev: hex.EncodeToString(cfg.SeedSignature[:])}
	var alg ChecksumAlgorithm
	if len(cfg.Trailer) > 0 {
		for _, a := range allTrailerAlgorithms {
			if strings.EqualFold(strings.TrimSpace(string(cfg.Trailer)), a.HeaderName()) {
				alg = a
			}
		}
		if alg == 0 {
			return nil, refError("unsupported trailer")
		}
	}
	rest := wire
	line := func() (string, error) {
		i := bytes.Index(rest, []byte("\r\n"))
		if i < 0 || i > 4096 {
			return "", refError("no line")
		}
		l := string(rest[:i])
		rest = rest[i+2:]
		return l, nil
	}
	isToken := func(s string) bool {
		if s == "" {
			return false
		}
		for _, c := range []byte(s) {
			if c <= ' ' || c >= 0x7f || strings.IndexByte(";=\",", c) >= 0 {
				return false
			}
		}
		return true
	}
	ows := " \t"
	var total int64
	for {
		l, err := line()
		if err != nil {
			return nil, err
		}
		l = strings.TrimRight(l, ows)
		n := 0
		for n < len(l) && strings.IndexByte("0123456789abcdefABCDEF", l[n]) >= 0 {
			n++
		}
		size, perr := strconv.ParseInt(l[:n], 16, 64)
		if perr != nil {
			return nil, refError("size")
		}
		elems := strings.Split(l[n:], ";")
		if strings.Trim(elems[0], ows) != "" {
			return nil, refError("after size")
		}
		sig, sigSeen := "", false
		for _, e := range elems[1:] {
			name, value, hasValue := strings.Cut(e, "=")
			name, value = strings.Trim(name, ows), strings.Trim(value, ows)
			if !isToken(name) || hasValue && !isToken(value) {
				return nil, refError("extension")
			}
			if strings.EqualFold(name, "chunk-signature") {
				if sigSeen {
					return nil, refError("two signatures")
				}
				sig, sigSeen = value, true
			}
		}
		var sigBytes []byte
		if cfg.Signed {
			if sigBytes, err = hex.DecodeString(sig); err != nil || len(sigBytes) != 32 {
				return nil, refError("signature syntax")
			}
			if size > int64(cfg.MaxChunkSize) {
				return nil, refError("chunk too large")
			}
		}
		if cfg.DecodedLength >= 0 && total+size > cfg.DecodedLength {
			return nil, refError("longer than decoded length")
		}
		total += size
		if size == 0 {
			if cfg.Signed && sg.chunk(nil) != hex.EncodeToString(sigBytes) {
				return nil, refError("final signature")
			}
			break
		}
		if int64(len(rest)) < size+2 || string(rest[size:size+2]) != "\r\n" {
			return nil, refError("chunk data")
		}
		data := rest[:size]
		rest = rest[size+2:]
		if cfg.Signed && sg.chunk(data) != hex.EncodeToString(sigBytes) {
			return nil, refError("chunk signature")
		}
		out = append(out, data...)
	}
	if cfg.DecodedLength >= 0 && total != cfg.DecodedLength {
		return nil, refError("shorter than decoded length")
	}
	var value, tsig string
	haveValue, haveSig := false, false
	for {
		l, err := line()
		if err != nil {
			return nil, err
		}
		l = strings.TrimLeft(strings.TrimRight(l, " \t\n"), ows)
		if l == "" {
			break
		}
		name, v, ok := strings.Cut(l, ":")
		if !ok || name == "" || strings.ContainsAny(l, "\r\n") || haveSig {
			return nil, refError("trailer line")
		}
		name, v = strings.Trim(name, ows), strings.Trim(v, ows)
		switch {
		case cfg.Signed && strings.EqualFold(name, "x-amz-trailer-signature"):
			if b, err := hex.DecodeString(v); err != nil || len(b) != 32 {
				return nil, refError("trailer signature syntax")
			}
			tsig, haveSig = strings.ToLower(v), true
		case alg != 0 && !haveValue && strings.EqualFold(name, alg.HeaderName()):
			if len(v) > 64 {
				return nil, refError("trailer value too long")
			}
			value, haveValue = v, true
		default:
			return nil, refError("unexpected trailer")
		}
	}
	if alg != 0 && (!haveValue || cfg.Signed && !haveSig) {
		return nil, refError("trailer missing")
	}
	if haveSig {
		canonical := ""
		if alg != 0 {
			canonical = alg.HeaderName() + ":" + value + "\n"
		}
		if sg.trailer(canonical) != tsig {
			return nil, refError("trailer signature")
		}
	}
	if alg != 0 {
		b, err := base64.StdEncoding.Strict().DecodeString(value) // canonical padding only
		if err != nil || len(b) != alg.Size() || len(value) != base64.StdEncoding.EncodedLen(alg.Size()) || strings.ContainsAny(value, "\r\n") {
			return nil, refError("checksum syntax")
		}
		if !bytes.Equal(b, refHash(alg, out)) {
			return nil, refError("checksum")
		}
	}
	if len(rest) != 0 {
		return nil, refError("trailing data")
	}
	return out, nil
}

// The reference agrees with the reader on the hand-written cases too.
func TestReferenceDecodeAgrees(t *testing.T) {
	payload := []byte("abcdefghijklmnopqrstuvwxyz")
	for _, signed := range []bool{true, false} {
		for _, a := range allTrailerAlgorithms {
			b := buildStream(t, chunkStream{signed: signed, payload: payload, sizes: []int{5}, trailer: a})
			cfg := fuzzConfig(t, signed, int32(len(payload)), fuzzSel(a, 0, false))
			out, err := referenceDecode(b.wire, cfg)
			if err != nil || !bytes.Equal(out, payload) {
				t.Fatalf("reference: %q, %v", out, err)
			}
			for i := range b.wire {
				checkAgainstReference(t, b.wire[:i], cfg, i%2 == 0)
				checkAgainstReference(t, flipByte(b.wire, i), cfg, i%2 == 1)
			}
		}
	}
}
