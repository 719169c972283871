package secrets

import "strings"

// matcher finds every occurrence of many patterns in one pass over a text
// (Aho-Corasick), so that masking costs the length of the text, not the
// length times the number of forms of every value. It is read-only once
// built and safe for concurrent use.
type matcher struct {
	// The edges of node n are edges[first[n]:first[n+1]].
	first []int32
	edges []edge
	// fail is, per node, the node of the longest proper suffix of the
	// node's text that is also in the trie.
	fail []int32
	// longest is, per node, the length of the longest pattern that ends
	// at the node's text (its own or one of its suffixes'), 0 if none.
	longest []int32
	// root is the root's transitions, by byte (0: stay at the root).
	root [256]int32
}

type edge struct {
	b  byte
	to int32
}

func newMatcher(patterns []string) *matcher {
	size := 1
	for _, p := range patterns {
		size += len(p)
	}
	// The trie, as a map from (node, byte) to child; node 0 is the root.
	trie := make(map[uint64]int32, size)
	longest := make([]int32, 1, size) // per node

	for _, p := range patterns {
		n := int32(0)
		for i := 0; i < len(p); i++ {
			k := uint64(n)<<8 | uint64(p[i])
			c, ok := trie[k]
			if !ok {
				c = int32(len(longest))
				trie[k] = c
				longest = append(longest, 0)
			}
			n = c
		}
		longest[n] = max(longest[n], int32(len(p)))
	}
	nodes := len(longest)
	m := &matcher{first: make([]int32, nodes+1), edges: make([]edge, len(trie)), fail: make([]int32, nodes), longest: longest}
	for k := range trie {
		m.first[k>>8+1]++
	}
	for n := 0; n < nodes; n++ {
		m.first[n+1] += m.first[n]
	}
	fill := append([]int32(nil), m.first[:nodes]...)
	for k, c := range trie {
		n := k >> 8
		m.edges[fill[n]] = edge{byte(k), c}
		fill[n]++
	}
	queue := make([]int32, 0, nodes)
	for _, e := range m.children(0) {
		m.root[e.b] = e.to
		queue = append(queue, e.to)
	}
	// Breadth first: a node's fail node is shallower, so done before it.
	for i := 0; i < len(queue); i++ {
		n := queue[i]
		for _, e := range m.children(n) {
			f := m.step(m.fail[n], e.b)
			m.fail[e.to] = f
			m.longest[e.to] = max(m.longest[e.to], m.longest[f])
			queue = append(queue, e.to)
		}
	}
	return m
}

func (m *matcher) children(n int32) []edge { return m.edges[m.first[n]:m.first[n+1]] }

// step is the automaton's transition from n on b.
func (m *matcher) step(n int32, b byte) int32 {
	for n != 0 {
		for _, e := range m.children(n) {
			if e.b == b {
				return e.to
			}
		}
		n = m.fail[n]
	}
	return m.root[b]
}

// mask replaces each stretch of s covered by occurrences of patterns
// (overlapping or adjacent ones merged) with "***".
func (m *matcher) mask(s string) string {
	type span struct{ from, to int }
	var spans []span
	n := int32(0)
	for i := 0; i < len(s); i++ {
		n = m.step(n, s[i])
		l := int(m.longest[n])
		if l == 0 {
			continue
		}
		sp := span{i + 1 - l, i + 1}
		for len(spans) > 0 && spans[len(spans)-1].to >= sp.from {
			sp.from = min(sp.from, spans[len(spans)-1].from)
			spans = spans[:len(spans)-1]
		}
		spans = append(spans, sp)
	}
	if len(spans) == 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	at := 0
	for _, sp := range spans {
		b.WriteString(s[at:sp.from])
		b.WriteString(hidden)
		at = sp.to
	}
	b.WriteString(s[at:])
	return b.String()
}
