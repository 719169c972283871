package secrets

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"sync"
)

// minMaskLen is the shortest value masked: shorter ones would blank out
// ordinary words of messages and reveal little.
const minMaskLen = 3

// hidden is what a masked value reads as.
const hidden = "***"

// Masker replaces decrypted values in what ferry shows people: reports,
// errors, logs, summaries, comments. It reads the values of the
// decryptors it watches when asked, so values decrypted later are masked
// too.
//
// Mask on the data, before it is encoded: MaskValue on an object's
// content before it becomes YAML or JSON, Redact on a typed report before
// it is rendered. An encoder can write a value in a form no search of its
// output finds (YAML folds long strings at spaces, a diff or a report
// truncates, markdown replaces characters). Mask on encoded text is the
// second line: it finds each value as it is, and as the encoders ferry
// and its libraries use write it (see forms).
//
// A value that is a URL with a host (a webhook's address) is masked with
// its secret parts, its path, query and userinfo and the segments that
// read as credentials (see URLParts): a server that refuses a request
// echoes them without the rest.
//
// Values are masked line by line, and a line (or value) shorter than
// three characters, spaces left out, is not masked. A value cut apart
// before it reaches ferry (kustomize replacements copying part of one)
// cannot be recognized.
type Masker struct {
	mu   sync.Mutex
	from []*Decryptor
	// given holds the values handed to Add, as a decryptor that decrypts
	// nothing.
	given *Decryptor
	// built is how many values mt was built from; decryptors only add
	// values, so another count means mt is stale.
	built int
	mt    *matcher
}

// NewMasker returns a masker that watches no decryptor yet.
func NewMasker() *Masker { return &Masker{} }

// Watch adds a decryptor whose values are masked from now on.
func (m *Masker) Watch(d *Decryptor) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.from = append(m.from, d)
}

// Add has the masker hide values ferry read from elsewhere than a SOPS
// file: a registry password from the environment, say. A nil Masker
// ignores them.
func (m *Masker) Add(values ...string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	if m.given == nil {
		m.given = NewDecryptor(nil)
		m.from = append(m.from, m.given)
	}
	m.mu.Unlock()
	m.given.mu.Lock()
	defer m.given.mu.Unlock()
	for _, v := range values {
		if v == "" {
			continue
		}
		m.given.values[v] = struct{}{}
	}
}

// Values returns every value the masker hides, and the secret parts of
// those that are URLs (see URLParts).
func (m *Masker) Values() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, d := range m.from {
		for _, v := range d.Values() {
			out = append(append(out, v), URLParts(v)...)
		}
	}
	return out
}

// size is how many values the decryptor holds.
func (d *Decryptor) size() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.values)
}

// matcher returns the matcher of every form of every value watched, nil
// when there is nothing to mask.
func (m *Masker) matcher() *matcher {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, d := range m.from {
		n += d.size()
	}
	if n == 0 {
		return nil
	}
	if m.mt == nil || n != m.built {
		var values []string
		for _, d := range m.from {
			values = append(values, d.Values()...)
		}
		m.mt = newMatcher(patterns(values))
		m.built = n
	}
	return m.mt
}

// Mask replaces every watched value in s with "***", in every form the
// encoders write it (see forms). Where two values overlap in s, all of
// both is replaced. A nil Masker returns s.
func (m *Masker) Mask(s string) string {
	mt := m.matcher()
	if mt == nil {
		return s
	}
	return mt.mask(s)
}

// MaskValue returns the content of an object (what encoding/json or a
// YAML decoder makes of one: maps, slices, strings, numbers, booleans)
// with every watched value masked in its strings, before anything encodes
// it. Maps and slices are copied, keys are kept; a number or boolean that
// is a watched value becomes the string "***". v is not modified, and is
// returned as it is when there is nothing to mask.
func (m *Masker) MaskValue(v any) any {
	mt := m.matcher()
	if mt == nil {
		return v
	}
	return mt.value(v)
}

// Redact masks, in place, every string that v reaches: v is a pointer to
// a typed result (a report, a change set) or a slice or map of them. It
// follows exported fields, pointers, slices, maps and interfaces; values
// held as json.RawMessage are decoded, masked as data and encoded again.
// Map keys and unexported fields are left alone.
func (m *Masker) Redact(v any) {
	mt := m.matcher()
	if mt == nil || v == nil {
		return
	}
	r := redactor{mt: mt, seen: map[uintptr]bool{}}
	r.walk(reflect.ValueOf(v))
}

func (mt *matcher) value(v any) any {
	switch t := v.(type) {
	case string:
		return mt.mask(t)
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = mt.value(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = mt.value(e)
		}
		return out
	case map[string]string:
		out := make(map[string]string, len(t))
		for k, e := range t {
			out[k] = mt.mask(e)
		}
		return out
	case []string:
		out := make([]string, len(t))
		for i, e := range t {
			out[i] = mt.mask(e)
		}
		return out
	case json.Number:
		if s := mt.mask(string(t)); s != string(t) {
			return s
		}
	default:
		// A decrypted value SOPS typed as a number or boolean.
		if s, ok := scalarString(t); ok {
			if masked := mt.mask(s); masked != s {
				return masked
			}
		}
	}
	return v
}

// redactor walks a typed value for Redact.
type redactor struct {
	mt   *matcher
	seen map[uintptr]bool
}

var (
	rawMessageType = reflect.TypeOf(json.RawMessage(nil))
	numberType     = reflect.TypeOf(json.Number(""))
)

func (r redactor) walk(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() || r.seen[v.Pointer()] {
			return
		}
		r.seen[v.Pointer()] = true
		r.walk(v.Elem())
	case reflect.Interface:
		if v.IsNil() {
			return
		}
		e := v.Elem()
		switch {
		case e.Kind() == reflect.Pointer || e.Kind() == reflect.Map || e.Kind() == reflect.Slice:
			r.walk(e) // changed through the reference
		case !v.CanSet():
		case e.Kind() == reflect.Struct || e.Kind() == reflect.Array || e.Kind() == reflect.String && e.Type() != numberType:
			c := reflect.New(e.Type()).Elem()
			c.Set(e)
			r.walk(c)
			v.Set(c)
		default:
			// A number or boolean that is a watched value becomes a string.
			if m := reflect.ValueOf(r.mt.value(e.Interface())); m.Type() != e.Type() && m.Type().AssignableTo(v.Type()) {
				v.Set(m)
			}
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if f := v.Field(i); f.CanSet() {
				r.walk(f)
			}
		}
	case reflect.Slice:
		if v.Type() == rawMessageType {
			if v.CanSet() && !v.IsNil() {
				v.SetBytes(r.rawJSON(v.Bytes()))
			}
			return
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return
		}
		for i := 0; i < v.Len(); i++ {
			r.walk(v.Index(i))
		}
	case reflect.Array:
		for i := 0; i < v.Len(); i++ {
			if e := v.Index(i); e.CanSet() {
				r.walk(e)
			}
		}
	case reflect.Map:
		if v.IsNil() {
			return
		}
		iter := v.MapRange()
		type entry struct{ k, v reflect.Value }
		var changed []entry
		for iter.Next() {
			c := reflect.New(iter.Value().Type()).Elem()
			c.Set(iter.Value())
			r.walk(c)
			changed = append(changed, entry{iter.Key(), c})
		}
		for _, e := range changed {
			v.SetMapIndex(e.k, e.v)
		}
	case reflect.String:
		if v.CanSet() {
			v.SetString(r.mt.mask(v.String()))
		}
	}
}

// rawJSON masks a JSON document as data: decoded, masked, encoded again.
// Text that does not decode is masked as text, and replaced by the JSON
// string "***" if that leaves it invalid.
func (r redactor) rawJSON(raw []byte) []byte {
	var v any
	d := json.NewDecoder(strings.NewReader(string(raw)))
	d.UseNumber()
	if err := d.Decode(&v); err != nil || d.More() {
		m := r.mt.mask(string(raw))
		if m == string(raw) {
			return raw
		}
		if !json.Valid([]byte(m)) {
			return []byte(strconv.Quote(hidden))
		}
		return []byte(m)
	}
	masked := r.mt.value(v)
	if reflect.DeepEqual(masked, v) {
		return raw
	}
	b, err := json.Marshal(masked)
	if err != nil {
		return []byte(strconv.Quote(hidden))
	}
	return b
}

// scalarString is the text of a number or boolean, as SOPS decrypts it.
func scalarString(v any) (string, bool) {
	switch t := v.(type) {
	case bool:
		return strconv.FormatBool(t), true
	case int:
		return strconv.Itoa(t), true
	case int32:
		return strconv.FormatInt(int64(t), 10), true
	case int64:
		return strconv.FormatInt(t, 10), true
	case uint64:
		return strconv.FormatUint(t, 10), true
	case float64:
		return strconv.FormatFloat(t, 'f', -1, 64), true
	}
	return "", false
}
