package strictjson

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/taskhook/taskhook/problem"
)

// MaxDepth is how deeply objects and arrays may nest in a request body,
// the body object itself being level 1. No request needs more than a few
// levels; Go's decoder would take 10000, and every reader of a stored value
// would pay for them again.
const MaxDepth = 64

// maxPathKey bounds one key quoted in an error's field path.
const maxPathKey = 64

// check is one pass over a body that starts with '{', before it is
// decoded into a value of shape root. encoding/json keeps invalid UTF-8 in a
// json.RawMessage as it came, replaces it with U+FFFD in a string, accepts
// 10000 levels of nesting and matches field names case-insensitively (so
// {"SESSIONID": ...} overrides sessionId); this pass refuses all four, naming
// the field. A syntax error anywhere wins over those problems, as it would in
// the decoder, so a broken body is always a SyntaxError; the others are a
// *problem.ValidationError.
func check(body []byte, root *shape) error {
	// On the stack, as its frames are: no allocation, no write barriers.
	sc := bodyScan{data: body, validUTF8: utf8.Valid(body)}
	if !sc.scan(root) {
		return errNotJSON
	}
	if sc.pos < len(sc.data) {
		return errTrailing
	}
	if sc.problem != nil {
		return sc.problem
	}
	return nil
}

// shape is what a decoding target says about the JSON it takes: the exact
// member names of a struct, and the shape of what nests below.
type shape struct {
	kind   shapeKind
	fields map[string]*shape // shapeStruct: by exact JSON name
	elem   *shape            // shapeList, shapeMap: every element or value
}

type shapeKind uint8

const (
	shapeFree   shapeKind = iota // any JSON (json.RawMessage, any, a scalar): no names to check
	shapeStruct                  // an object with fixed member names
	shapeList                    // a slice or an array
	shapeMap                     // an object with any member names
)

var (
	freeShape       = &shape{kind: shapeFree}
	shapes          sync.Map // reflect.Type -> *shape
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// shapeOf is the shape of the values Decode decodes into t (a pointer
// is looked through), built once per type.
func shapeOf(t reflect.Type) *shape {
	if s, ok := shapes.Load(t); ok {
		return s.(*shape)
	}
	s, _ := shapes.LoadOrStore(t, buildShape(t, map[reflect.Type]*shape{}))
	return s.(*shape)
}

func buildShape(t reflect.Type, building map[reflect.Type]*shape) *shape {
	if s, ok := building[t]; ok {
		return s // a recursive type
	}
	if t.Kind() != reflect.Pointer {
		if pt := reflect.PointerTo(t); pt.Implements(jsonUnmarshaler) || pt.Implements(textUnmarshaler) {
			return freeShape // it reads its own JSON (json.RawMessage among them)
		}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return buildShape(t.Elem(), building)
	case reflect.Slice, reflect.Array:
		if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 {
			return freeShape // []byte is a base64 string
		}
		s := &shape{kind: shapeList}
		building[t] = s
		s.elem = buildShape(t.Elem(), building)
		return s
	case reflect.Map:
		s := &shape{kind: shapeMap}
		building[t] = s
		s.elem = buildShape(t.Elem(), building)
		return s
	case reflect.Struct:
		s := &shape{kind: shapeStruct, fields: map[string]*shape{}}
		building[t] = s
		addFields(s, t, building, 0, map[string]int{}, map[reflect.Type]bool{})
		return s
	}
	return freeShape
}

// addFields names the members of struct t as encoding/json does: the tag's
// name or the Go name, "-" left out, the fields of an untagged embedded
// struct promoted (a shallower field wins).
func addFields(s *shape, t reflect.Type, building map[reflect.Type]*shape, depth int, depths map[string]int, seen map[reflect.Type]bool) {
	if seen[t] {
		return
	}
	seen[t] = true
	defer delete(seen, t)
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				addFields(s, ft, building, depth+1, depths, seen)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if d, ok := depths[name]; ok && d <= depth {
			continue
		}
		depths[name] = depth
		s.fields[name] = buildShape(f.Type, building)
	}
}

// bodyScan reads a body once, checking its syntax as encoding/json does and,
// until the first problem, the rules above.
type bodyScan struct {
	data      []byte
	pos       int
	validUTF8 bool            // the whole body is: no string needs a look of its own
	frames    [MaxDepth]frame // the open containers, up to MaxDepth
	nframes   int
	deeper    []uint64 // open containers past MaxDepth, a bit each: 1 for an array
	ndeeper   int
	problem   *problem.ValidationError // the first problem; after it only the syntax is checked
}

// frame is one open object or array.
type frame struct {
	shape   *shape
	child   *shape // of the member or element being read
	key     []byte // object: the member's key as written
	escaped bool   // the key holds escapes
	index   int    // array: the element's index
	array   bool
}

// followsShape reports whether the container is what its shape expects.
func (f *frame) followsShape() bool {
	if f.array {
		return f.shape.kind == shapeList
	}
	return f.shape.kind == shapeStruct || f.shape.kind == shapeMap
}

// scan reads the value at pos and everything nested in it; false is a
// syntax error.
func (sc *bodyScan) scan(root *shape) bool {
	want := root // the shape of the next value
	for {
		sc.skipSpace()
		if sc.pos >= len(sc.data) {
			return false
		}
		switch c := sc.data[sc.pos]; {
		case c == '{' || c == '[':
			array, end := c == '[', byte('}')
			if array {
				end = ']'
			}
			sc.pos++
			sc.open(want, array)
			sc.skipSpace()
			if sc.pos < len(sc.data) && sc.data[sc.pos] == end {
				sc.pos++
				sc.close()
				break
			}
			if !array && !sc.member() {
				return false
			}
			want = sc.childShape()
			continue
		case c == '"':
			end, escaped, ok := sc.str()
			if !ok {
				return false
			}
			if sc.problem == nil && (!sc.validUTF8 || escaped) {
				if msg := textProblem(sc.data[sc.pos+1:end], !sc.validUTF8, escaped); msg != "" {
					sc.problem = invalid(sc.path(sc.nframes, false), msg)
				}
			}
			sc.pos = end + 1
		case c == '-' || ('0' <= c && c <= '9'):
			if !sc.number() {
				return false
			}
		default:
			if !sc.literal() {
				return false
			}
		}
		// A value ended: go on to the next member or element, closing
		// every container that ends here.
		for {
			if sc.depth() == 0 {
				sc.skipSpace()
				return true
			}
			sc.skipSpace()
			if sc.pos >= len(sc.data) {
				return false
			}
			c := sc.data[sc.pos]
			sc.pos++
			if sc.topIsArray() {
				if c == ']' {
					sc.close()
					continue
				}
				if c != ',' {
					return false
				}
				if sc.ndeeper == 0 {
					sc.frames[sc.nframes-1].index++
				}
			} else {
				if c == '}' {
					sc.close()
					continue
				}
				if c != ',' {
					return false
				}
				sc.skipSpace()
				if !sc.member() {
					return false
				}
			}
			want = sc.childShape()
			break
		}
	}
}

func (sc *bodyScan) skipSpace() {
	for sc.pos < len(sc.data) {
		switch sc.data[sc.pos] {
		case ' ', '\t', '\n', '\r':
			sc.pos++
		default:
			return
		}
	}
}

func (sc *bodyScan) depth() int { return sc.nframes + sc.ndeeper }

// open starts an object or an array of shape s.
func (sc *bodyScan) open(s *shape, array bool) {
	if sc.nframes < MaxDepth {
		f := frame{shape: s, array: array, child: freeShape}
		if array && s.kind == shapeList {
			f.child = s.elem
		}
		sc.frames[sc.nframes] = f
		sc.nframes++
		return
	}
	if sc.problem == nil {
		sc.problem = invalid(sc.path(sc.nframes, true),
			"nests objects and arrays deeper than "+strconv.Itoa(MaxDepth)+" levels")
	}
	word, bit := sc.ndeeper/64, uint(sc.ndeeper%64)
	if word == len(sc.deeper) {
		sc.deeper = append(sc.deeper, 0)
	}
	if array {
		sc.deeper[word] |= 1 << bit
	} else {
		sc.deeper[word] &^= 1 << bit
	}
	sc.ndeeper++
}

func (sc *bodyScan) close() {
	if sc.ndeeper > 0 {
		sc.ndeeper--
		return
	}
	sc.nframes--
}

func (sc *bodyScan) topIsArray() bool {
	if sc.ndeeper > 0 {
		n := sc.ndeeper - 1
		return sc.deeper[n/64]&(1<<uint(n%64)) != 0
	}
	return sc.frames[sc.nframes-1].array
}

func (sc *bodyScan) childShape() *shape {
	if sc.ndeeper > 0 {
		return freeShape
	}
	return sc.frames[sc.nframes-1].child
}

// member reads `"key" :` of the innermost object, at pos, and looks the key
// up in the object's shape.
func (sc *bodyScan) member() bool {
	if sc.pos >= len(sc.data) || sc.data[sc.pos] != '"' {
		return false
	}
	end, escaped, ok := sc.str()
	if !ok {
		return false
	}
	key := sc.data[sc.pos+1 : end]
	sc.pos = end + 1
	sc.skipSpace()
	if sc.pos >= len(sc.data) || sc.data[sc.pos] != ':' {
		return false
	}
	sc.pos++
	if sc.ndeeper > 0 {
		return true
	}
	f := &sc.frames[sc.nframes-1]
	f.key, f.escaped, f.child = key, escaped, freeShape
	if sc.problem != nil {
		return true
	}
	if !sc.validUTF8 || escaped {
		if msg := textProblem(key, !sc.validUTF8, escaped); msg != "" {
			sc.problem = invalid(sc.path(sc.nframes-1, false), "has a field name that "+msg)
			return true
		}
	}
	switch f.shape.kind {
	case shapeMap:
		f.child = f.shape.elem
	case shapeStruct:
		child, known := f.shape.fields[string(key)] // looked up without a copy
		if escaped {
			child, known = f.shape.fields[unquote(key)]
		}
		if !known {
			sc.problem = invalid(sc.path(sc.nframes, false), unknownFieldMessage(f.shape, f))
			return true
		}
		f.child = child
	}
	return true
}

// unknownFieldMessage says a member is not a field; when it differs from one
// only in case, it names the field as it must be written.
func unknownFieldMessage(s *shape, f *frame) string {
	name := string(f.key)
	if f.escaped {
		name = unquote(f.key)
	}
	for known := range s.fields {
		if strings.EqualFold(known, name) {
			return "is not a known field (names match exactly: " + known + ")"
		}
	}
	return "is not a known field"
}

// str reads the string whose opening quote is at pos, returning the index of
// its closing quote; ok is false on a syntax error.
func (sc *bodyScan) str() (end int, escaped, ok bool) {
	d := sc.data
	for i := sc.pos + 1; i < len(d); {
		for i < len(d) && plainText[d[i]] {
			i++
		}
		if i == len(d) {
			break
		}
		c := d[i]
		switch {
		case c == '"':
			return i, escaped, true
		case c == '\\':
			escaped = true
			if i+1 >= len(d) {
				return 0, false, false
			}
			switch d[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if _, ok := hex4(d, i+2); !ok {
					return 0, false, false
				}
				i += 6
			default:
				return 0, false, false
			}
		case c < 0x20:
			return 0, false, false
		default:
			i++
		}
	}
	return 0, false, false
}

// plainText marks the bytes a string holds as they are: all but the quote,
// the backslash and control characters.
var plainText = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// textProblem says what is wrong with the inside of a string that is
// syntactically sound: invalid UTF-8, or an escaped UTF-16 surrogate without
// its other half (which decoders turn into U+FFFD, or refuse). Empty when
// nothing is. checkUTF8 is false when the whole body is known to be valid.
func textProblem(s []byte, checkUTF8, escaped bool) string {
	if checkUTF8 && !utf8.Valid(s) {
		return "is not valid UTF-8"
	}
	if !escaped {
		return ""
	}
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			continue
		}
		i++
		if s[i] != 'u' {
			continue
		}
		r, _ := hex4(s, i+1)
		i += 4
		switch {
		case 0xDC00 <= r && r <= 0xDFFF:
			return "holds an unpaired UTF-16 surrogate escape"
		case 0xD800 <= r && r <= 0xDBFF:
			if i+6 < len(s) && s[i+1] == '\\' && s[i+2] == 'u' {
				if lo, _ := hex4(s, i+3); 0xDC00 <= lo && lo <= 0xDFFF {
					i += 6
					continue
				}
			}
			return "holds an unpaired UTF-16 surrogate escape"
		}
	}
	return ""
}

func hex4(d []byte, i int) (rune, bool) {
	if i+4 > len(d) {
		return 0, false
	}
	var r rune
	for _, c := range d[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// number reads a JSON number at pos: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (sc *bodyScan) number() bool {
	d, i := sc.data, sc.pos
	if d[i] == '-' {
		i++
	}
	digits := func() bool {
		start := i
		for i < len(d) && '0' <= d[i] && d[i] <= '9' {
			i++
		}
		return i > start
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case !digits():
		return false
	}
	if i < len(d) && d[i] == '.' {
		i++
		if !digits() {
			return false
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if !digits() {
			return false
		}
	}
	sc.pos = i
	return true
}

func (sc *bodyScan) literal() bool {
	for _, lit := range [...]string{"true", "false", "null"} {
		if len(sc.data)-sc.pos >= len(lit) && string(sc.data[sc.pos:sc.pos+len(lit)]) == lit {
			sc.pos += len(lit)
			return true
		}
	}
	return false
}

// path names the member or element being read in the first n frames:
// requests[0].prompt. named stops where the JSON stops following the
// target's shape, as inside a value that takes any JSON (input, not
// input[0][0]...).
func (sc *bodyScan) path(n int, named bool) string {
	var b strings.Builder
	for i, f := range sc.frames[:n] {
		if named && i > 0 && !f.followsShape() {
			break
		}
		if f.array {
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(f.index))
			b.WriteByte(']')
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		key := string(f.key)
		if f.escaped {
			key = unquote(f.key)
		}
		if len(key) > maxPathKey {
			cut := maxPathKey
			for cut > 0 && !utf8.RuneStart(key[cut]) {
				cut--
			}
			key = key[:cut] + "..."
		}
		b.WriteString(key)
	}
	if b.Len() == 0 {
		return "body"
	}
	return b.String()
}

// unquote is the text of a key that holds escapes.
func unquote(raw []byte) string {
	var s string
	_ = json.Unmarshal(append(append([]byte{'"'}, raw...), '"'), &s)
	return s
}

func invalid(field, msg string) *problem.ValidationError {
	return &problem.ValidationError{Field: field, Message: msg}
}
