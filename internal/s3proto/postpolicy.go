package s3proto

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// A form upload's policy is a JSON document, base64-encoded in the form's
// policy field and signed by the credential that issued the form (S3's
// "POST Policy"):
//
//	{"expiration": "2026-12-01T12:00:00Z",
//	 "conditions": [{"bucket": "lake"}, ["starts-with", "$key", "uploads/"],
//	                ["content-length-range", 0, 1048576], {"x-amz-credential": "…"}, …]}
//
// The form may do what the conditions allow and nothing else: each must
// hold, and each field of the form (but the signature, the policy, the file
// and x-ignore-* fields) must be named by one.

// PostMatch is how a condition compares a field.
type PostMatch uint8

const (
	PostEq         PostMatch = iota // the field equals the value
	PostStartsWith                  // the field starts with the value ("" matches anything)
)

// PostCondition is one condition on a field.
type PostCondition struct {
	Match PostMatch
	Field string // lower-case, without the '$'
	Value string
}

// String renders the condition as S3 quotes it in an error.
func (c PostCondition) String() string {
	op := "eq"
	if c.Match == PostStartsWith {
		op = "starts-with"
	}
	return `["` + op + `", "$` + c.Field + `", "` + c.Value + `"]`
}

// PostPolicy is a parsed policy document.
type PostPolicy struct {
	Expiration time.Time
	Conditions []PostCondition
	// The content-length-range condition, if any: the file's size in
	// bytes must be within [MinLength, MaxLength].
	HasLengthRange       bool
	MinLength, MaxLength int64
}

// InvalidPolicyDocument answers a policy the gateway cannot read (400).
func InvalidPolicyDocument(msg string) *Error {
	return newError("InvalidPolicyDocument", http.StatusBadRequest, "Invalid Policy: "+or(msg, "Invalid JSON."))
}

// policyDenied answers a form the policy does not allow (403).
func policyDenied(msg string) *Error {
	return AccessDenied("Invalid according to Policy: " + msg)
}

// exactOnly are the fields a policy may only match exactly.
func exactOnly(field string) bool {
	switch field {
	case "bucket", "x-amz-algorithm", "x-amz-credential", "x-amz-date", "x-amz-security-token":
		return true
	}
	return false
}

// ParsePostPolicy reads a policy document (decoded from base64). It refuses
// what S3 refuses and what could be read two ways: anything but one object
// with exactly "expiration" (an RFC 3339 UTC time) and "conditions" (a
// non-empty array), duplicate object keys, conditions that are neither
// {"field": "value"} objects of strings nor ["eq"|"starts-with", "$field",
// "value"] or ["content-length-range", min, max] arrays, starts-with on a
// field S3 matches exactly, and a second content-length-range. Errors are
// *Error (InvalidPolicyDocument).
func ParsePostPolicy(doc []byte) (*PostPolicy, error) {
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber()
	p := &PostPolicy{}
	if err := expectDelim(d, '{'); err != nil {
		return nil, err
	}
	var sawExpiration, sawConditions bool
	for d.More() {
		key, err := stringToken(d)
		if err != nil {
			return nil, err
		}
		switch key {
		case "expiration":
			if sawExpiration {
				return nil, InvalidPolicyDocument("the policy has two expirations.")
			}
			sawExpiration = true
			v, err := stringToken(d)
			if err != nil {
				return nil, err
			}
			t, perr := time.Parse(time.RFC3339Nano, v)
			if perr != nil || !strings.HasSuffix(v, "Z") {
				return nil, InvalidPolicyDocument("Invalid 'expiration' value: '" + v + "'")
			}
			p.Expiration = t
		case "conditions":
			if sawConditions {
				return nil, InvalidPolicyDocument("the policy has two condition lists.")
			}
			sawConditions = true
			if err := p.parseConditions(d); err != nil {
				return nil, err
			}
		default:
			return nil, InvalidPolicyDocument("Unexpected field '" + key + "'.")
		}
	}
	if err := expectDelim(d, '}'); err != nil {
		return nil, err
	}
	if _, err := d.Token(); !errors.Is(err, io.EOF) {
		return nil, InvalidPolicyDocument("")
	}
	switch {
	case !sawExpiration:
		return nil, InvalidPolicyDocument("Policy missing expiration.")
	case !sawConditions || len(p.Conditions) == 0 && !p.HasLengthRange:
		return nil, InvalidPolicyDocument("Policy missing conditions.")
	}
	return p, nil
}

func (p *PostPolicy) parseConditions(d *json.Decoder) error {
	if err := expectDelim(d, '['); err != nil {
		return err
	}
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return InvalidPolicyDocument("")
		}
		switch t {
		case json.Delim('{'):
			// {"field": "value", …}: exact matches.
			n := 0
			for d.More() {
				field, err := stringToken(d)
				if err != nil {
					return err
				}
				value, err := stringToken(d)
				if err != nil {
					return InvalidPolicyDocument("Condition values must be strings.")
				}
				if err := p.add(PostEq, field, value); err != nil {
					return err
				}
				n++
			}
			if err := expectDelim(d, '}'); err != nil {
				return err
			}
			if n == 0 {
				return InvalidPolicyDocument("an empty condition.")
			}
		case json.Delim('['):
			if err := p.parseArray(d); err != nil {
				return err
			}
		default:
			return InvalidPolicyDocument("Conditions must be objects or arrays.")
		}
	}
	return expectDelim(d, ']')
}

// parseArray reads an array condition after its '['.
func (p *PostPolicy) parseArray(d *json.Decoder) error {
	op, err := stringToken(d)
	if err != nil {
		return err
	}
	switch strings.ToLower(op) {
	case "eq", "starts-with":
		field, err := stringToken(d)
		if err != nil {
			return err
		}
		value, err := stringToken(d)
		if err != nil {
			return err
		}
		if !strings.HasPrefix(field, "$") {
			return InvalidPolicyDocument("Condition field names must start with '$': '" + field + "'.")
		}
		m := PostEq
		if strings.ToLower(op) == "starts-with" {
			m = PostStartsWith
		}
		if err := p.add(m, field[1:], value); err != nil {
			return err
		}
	case "content-length-range":
		if p.HasLengthRange {
			return InvalidPolicyDocument("the policy has two content-length-range conditions.")
		}
		lo, err := lengthToken(d)
		if err != nil {
			return err
		}
		hi, err := lengthToken(d)
		if err != nil {
			return err
		}
		if lo > hi {
			return InvalidPolicyDocument("content-length-range has its minimum above its maximum.")
		}
		p.HasLengthRange, p.MinLength, p.MaxLength = true, lo, hi
	default:
		return InvalidPolicyDocument("Unknown condition '" + op + "'.")
	}
	return expectDelim(d, ']')
}

func (p *PostPolicy) add(m PostMatch, field, value string) error {
	field = strings.ToLower(field)
	if field == "" {
		return InvalidPolicyDocument("a condition names no field.")
	}
	if m == PostStartsWith && exactOnly(field) {
		return InvalidPolicyDocument("'" + field + "' may only be matched exactly.")
	}
	p.Conditions = append(p.Conditions, PostCondition{Match: m, Field: field, Value: value})
	return nil
}

func expectDelim(d *json.Decoder, want json.Delim) error {
	t, err := d.Token()
	if err != nil || t != want {
		return InvalidPolicyDocument("")
	}
	return nil
}

func stringToken(d *json.Decoder) (string, error) {
	t, err := d.Token()
	s, ok := t.(string)
	if err != nil || !ok {
		return "", InvalidPolicyDocument("")
	}
	return s, nil
}

// lengthToken reads a content-length-range bound: a non-negative integer,
// as a number or a string of digits.
func lengthToken(d *json.Decoder) (int64, error) {
	t, err := d.Token()
	if err != nil {
		return 0, InvalidPolicyDocument("")
	}
	var s string
	switch v := t.(type) {
	case json.Number:
		s = v.String()
	case string:
		s = v
	default:
		return 0, InvalidPolicyDocument("content-length-range bounds must be integers.")
	}
	n, perr := strconv.ParseInt(s, 10, 64)
	if perr != nil || n < 0 || s[0] == '+' {
		return 0, InvalidPolicyDocument("content-length-range bounds must be non-negative integers.")
	}
	return n, nil
}

// postExempt reports whether a form field needs no condition: the signature,
// the policy itself, the file and x-ignore-* fields.
func postExempt(name []byte) bool {
	return equalFold(name, "policy") || equalFold(name, "x-amz-signature") || equalFold(name, "file") ||
		hasPrefixFold(name, "x-ignore-")
}

// Check applies the policy to a form at now: the bucket the request names,
// the object key the form names (with ${filename} already substituted) and
// the file's size. The policy must name the bucket (S3 would take a policy
// without a bucket condition for any bucket; the gateway does not), every
// condition must hold, and every field but the exempt ones must be named by
// a condition. Errors are *Error: AccessDenied (expired, a condition failed,
// a field no condition names), EntityTooSmall or EntityTooLarge.
func (p *PostPolicy) Check(f *PostForm, bucket, key []byte, size int64, now time.Time) *Error {
	if !now.Before(p.Expiration) {
		return policyDenied("Policy expired.")
	}
	hasBucket := false
	for _, c := range p.Conditions {
		var value []byte
		switch c.Field {
		case "bucket":
			value, hasBucket = bucket, true
		case "key":
			value = key
		default:
			value, _ = f.Get(c.Field)
		}
		ok := string(value) == c.Value
		if c.Match == PostStartsWith {
			ok = bytes.HasPrefix(value, []byte(c.Value))
		}
		if !ok {
			return policyDenied("Policy Condition failed: " + c.String())
		}
	}
	if !hasBucket {
		return policyDenied("the policy names no bucket; add a bucket condition.")
	}
	for _, fld := range f.Fields {
		if postExempt(fld.Name) {
			continue
		}
		named := false
		for _, c := range p.Conditions {
			if equalFold(fld.Name, c.Field) {
				named = true
				break
			}
		}
		if !named {
			return policyDenied("Extra input fields: " + string(fld.Name))
		}
	}
	if p.HasLengthRange {
		switch {
		case size < p.MinLength:
			return newError("EntityTooSmall", http.StatusBadRequest, "Your proposed upload is smaller than the minimum allowed size")
		case size > p.MaxLength:
			return newError("EntityTooLarge", http.StatusBadRequest, "Your proposed upload exceeds the maximum allowed size")
		}
	}
	return nil
}

// PostFormKey returns the object key a form names: its key field with every
// "${filename}" replaced by the file part's filename, appended to dst. The
// key must pass the checks every key does (Classify's). Errors are *Error.
func PostFormKey(dst []byte, f *PostForm) ([]byte, *Error) {
	raw, ok := f.Get("key")
	if !ok {
		return dst, InvalidArgument("Bucket POST must contain a field named 'key'.  If it is specified, please check the order of the fields.")
	}
	const variable = "${filename}"
	start := len(dst)
	for {
		i := bytes.Index(raw, []byte(variable))
		if i < 0 {
			dst = append(dst, raw...)
			break
		}
		if len(f.FileName) == 0 {
			return dst[:start], InvalidArgument("The key names ${filename}, but the file part has no filename.")
		}
		dst = append(append(dst, raw[:i]...), f.FileName...)
		raw = raw[i+len(variable):]
	}
	key := dst[start:]
	if len(key) == 0 {
		return dst[:start], InvalidArgument("User key must have a length greater than 0.")
	}
	if err := checkKey(key); err != nil {
		return dst[:start], err
	}
	return dst, nil
}
