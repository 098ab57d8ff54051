package s3proto

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"strconv"
)

// DeleteObjects limits, as S3 sets them.
const (
	// MaxDeleteObjects is the most keys one DeleteObjects request may name.
	MaxDeleteObjects = 1000
	// MaxDeleteObjectsBody caps the DeleteObjects body the server buffers
	// before ParseDeleteObjects; 1000 keys of 1024 bytes, escaped, fit.
	MaxDeleteObjectsBody = 2 << 20
)

// s3Namespace is the XML namespace S3 documents are in. SDKs that marshal
// from the API model send it on <Delete>; minio-go sends none.
const s3Namespace = "http://s3.amazonaws.com/doc/2006-03-01/"

// ParseDeleteObjects reads a DeleteObjects body,
//
//	<Delete xmlns="…"><Quiet>true</Quiet>
//	  <Object><Key>…</Key><VersionId>…</VersionId></Object>…</Delete>
//
// and returns every object key, decoded, appended to keys[:0], and the
// Quiet flag. The server forwards the body unchanged once every key is in
// scope, so the parser accepts only what every XML reader agrees on: a
// DOCTYPE, entity declarations, comments, CDATA sections and processing
// instructions (other than the XML declaration) are refused, as are unknown
// elements, a repeated <Key> or <Quiet>, foreign namespaces and more than
// MaxDeleteObjects objects. Each key must pass the same checks as a key in
// the path. Errors are *Error (MalformedXML, or InvalidArgument /
// KeyTooLongError for a refused key).
//
// The returned keys share one newly allocated buffer; keys is reused only
// for its slice headers.
func ParseDeleteObjects(body []byte, keys [][]byte) (out [][]byte, quiet bool, err error) {
	out = keys[:0]
	if len(body) > MaxDeleteObjectsBody {
		return out, false, MaxMessageLengthExceeded()
	}
	// "<!" can only start a DOCTYPE, an entity declaration, a comment or a
	// CDATA section: in well-formed XML a literal '<' appears nowhere else.
	// Refusing them all leaves no construct two parsers could read apart.
	if bytes.Contains(body, []byte("<!")) {
		return out, false, MalformedXML("DOCTYPE, comments and CDATA sections are not accepted")
	}

	p := deleteParser{dec: xml.NewDecoder(bytes.NewReader(body))}
	p.dec.Strict = true
	quiet, err = p.parse()
	if err != nil {
		return out, false, err
	}
	for _, s := range p.keys {
		out = append(out, p.arena[s.start:s.end:s.end])
	}
	return out, quiet, nil
}

type deleteParser struct {
	dec   *xml.Decoder
	arena []byte // every key, back to back
	keys  []span // each key's place in arena
	text  []byte // character data of the element being read
}

// token returns the next token, refusing the constructs no S3 body has.
func (p *deleteParser) token() (xml.Token, error) {
	t, err := p.dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, io.EOF
		}
		return nil, MalformedXML("")
	}
	switch t := t.(type) {
	case xml.StartElement:
		if err := checkElement(t); err != nil {
			return nil, err
		}
	case xml.ProcInst, xml.Comment, xml.Directive:
		// ProcInst here is never the XML declaration: parse reads that one.
		return nil, MalformedXML("")
	}
	return t, nil
}

func (p *deleteParser) parse() (quiet bool, err error) {
	// Prolog: an optional XML declaration, then whitespace, then <Delete>.
	first := true
	for {
		t, err := p.dec.Token()
		if err != nil {
			return false, MalformedXML("")
		}
		if pi, ok := t.(xml.ProcInst); ok && first && pi.Target == "xml" {
			first = false
			continue
		}
		first = false
		if cd, ok := t.(xml.CharData); ok && isXMLSpace(cd) {
			continue
		}
		start, ok := t.(xml.StartElement)
		if !ok || start.Name.Local != "Delete" {
			return false, MalformedXML("the body must be a <Delete> element")
		}
		if err := checkElement(start); err != nil {
			return false, err
		}
		break
	}

	haveQuiet := false
	for {
		t, err := p.token()
		if err != nil {
			return false, eofMalformed(err)
		}
		switch t := t.(type) {
		case xml.CharData:
			if !isXMLSpace(t) {
				return false, MalformedXML("unexpected text in <Delete>")
			}
		case xml.StartElement:
			switch t.Name.Local {
			case "Object":
				if len(p.keys) == MaxDeleteObjects {
					return false, MalformedXML("a DeleteObjects request names at most 1000 objects")
				}
				if err := p.object(); err != nil {
					return false, err
				}
			case "Quiet":
				if haveQuiet {
					return false, MalformedXML("<Quiet> given twice")
				}
				haveQuiet = true
				if err := p.leaf(); err != nil {
					return false, err
				}
				// As Go's encoding/xml reads a bool, which the Go S3 servers
				// behind the gateway use.
				q, perr := strconv.ParseBool(string(bytes.TrimSpace(p.text)))
				if perr != nil {
					return false, MalformedXML("<Quiet> must be true or false")
				}
				quiet = q
			default:
				return false, MalformedXML("unexpected element in <Delete>")
			}
		case xml.EndElement:
			// encoding/xml has checked it closes <Delete>.
			if len(p.keys) == 0 {
				return false, MalformedXML("a DeleteObjects request names at least one object")
			}
			return quiet, p.epilog()
		}
	}
}

// checkElement accepts elements in no namespace or S3's, carrying no
// attributes but namespace declarations.
func checkElement(t xml.StartElement) error {
	if t.Name.Space != "" && t.Name.Space != s3Namespace {
		return MalformedXML("unexpected XML namespace")
	}
	for _, a := range t.Attr {
		if a.Name.Space != "xmlns" && !(a.Name.Space == "" && a.Name.Local == "xmlns") {
			return MalformedXML("unexpected XML attribute")
		}
	}
	return nil
}

// object reads one <Object> after its start tag, through its end tag.
func (p *deleteParser) object() error {
	const (
		fKey = 1 << iota
		fVersionID
		fETag
		fLastModified
		fSize
	)
	var have int
	for {
		t, err := p.token()
		if err != nil {
			return eofMalformed(err)
		}
		switch t := t.(type) {
		case xml.CharData:
			if !isXMLSpace(t) {
				return MalformedXML("unexpected text in <Object>")
			}
		case xml.StartElement:
			var f int
			switch t.Name.Local {
			case "Key":
				f = fKey
			case "VersionId":
				f = fVersionID
			case "ETag":
				f = fETag
			case "LastModifiedTime":
				f = fLastModified
			case "Size":
				f = fSize
			default:
				return MalformedXML("unexpected element in <Object>")
			}
			if have&f != 0 {
				return MalformedXML("element repeated in <Object>")
			}
			have |= f
			if err := p.leaf(); err != nil {
				return err
			}
			if f != fKey {
				continue
			}
			if len(p.text) == 0 {
				return InvalidArgument("DeleteObjects names an empty key")
			}
			if e := checkKey(p.text); e != nil {
				return e
			}
			start := len(p.arena)
			p.arena = append(p.arena, p.text...)
			p.keys = append(p.keys, span{start, len(p.arena)})
		case xml.EndElement:
			if have&fKey == 0 {
				return MalformedXML("<Object> without <Key>")
			}
			return nil
		}
	}
}

// leaf reads the text of a simple element after its start tag, through its
// end tag, into p.text.
func (p *deleteParser) leaf() error {
	p.text = p.text[:0]
	for {
		t, err := p.token()
		if err != nil {
			return eofMalformed(err)
		}
		switch t := t.(type) {
		case xml.CharData:
			p.text = append(p.text, t...)
		case xml.EndElement:
			return nil
		default:
			return MalformedXML("unexpected element in a text element")
		}
	}
}

// epilog accepts only whitespace after </Delete>.
func (p *deleteParser) epilog() error {
	for {
		t, err := p.token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if cd, ok := t.(xml.CharData); !ok || !isXMLSpace(cd) {
			return MalformedXML("content after </Delete>")
		}
	}
}

func eofMalformed(err error) error {
	if err == io.EOF {
		return MalformedXML("the body ends inside <Delete>")
	}
	return err
}

func isXMLSpace(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return false
		}
	}
	return true
}
