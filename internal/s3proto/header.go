package s3proto

// Headers is a sigv4.HeaderReader over header values by lower-case name:
// the headers a remote sign request carries as JSON, or a test's. (The
// gateway reads its own from the wire without copying them.)
type Headers map[string][]string

// AppendValues implements sigv4.HeaderReader.
func (h Headers) AppendValues(dst [][]byte, name []byte) [][]byte {
	for _, v := range h[string(name)] {
		dst = append(dst, []byte(v))
	}
	return dst
}
