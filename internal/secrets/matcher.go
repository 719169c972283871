package secrets

import "strings"

// matcher finds every occurrence of many patterns in one pass over a text
// (Aho-Corasick), so that masking costs the length of the text, not the
// length times the number of forms of every value. It is read-only once
// built and safe for concurrent use.
type matcher struct {
	nodes []node
	// root is the root's transitions, by byte (0: stay at the root).
	root [256]int32
}

type node struct {
	edges []edge
	// fail is the node of the longest proper suffix of this node's text
	// that is also in the trie.
	fail int32
	// longest is the length of the longest pattern that ends at this
	// node's text (this node's own or one of its suffixes'), 0 if none.
	longest int32
}

type edge struct {
	b  byte
	to int32
}

func newMatcher(patterns []string) *matcher {
	m := &matcher{nodes: []node{{}}}
	for _, p := range patterns {
		n := int32(0)
		for i := 0; i < len(p); i++ {
			c := m.child(n, p[i])
			if c == 0 {
				c = int32(len(m.nodes))
				m.nodes = append(m.nodes, node{})
				m.nodes[n].edges = append(m.nodes[n].edges, edge{p[i], c})
			}
			n = c
		}
		m.nodes[n].longest = max(m.nodes[n].longest, int32(len(p)))
	}
	var queue []int32
	for _, e := range m.nodes[0].edges {
		m.root[e.b] = e.to
		queue = append(queue, e.to)
	}
	// Breadth first: a node's fail node is shallower, so done before it.
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		for _, e := range m.nodes[n].edges {
			f := m.step(m.nodes[n].fail, e.b)
			m.nodes[e.to].fail = f
			m.nodes[e.to].longest = max(m.nodes[e.to].longest, m.nodes[f].longest)
			queue = append(queue, e.to)
		}
	}
	return m
}

// child is n's transition on b in the trie, 0 when there is none (the
// root is no node's child).
func (m *matcher) child(n int32, b byte) int32 {
	for _, e := range m.nodes[n].edges {
		if e.b == b {
			return e.to
		}
	}
	return 0
}

// step is the automaton's transition from n on b.
func (m *matcher) step(n int32, b byte) int32 {
	for n != 0 {
		if c := m.child(n, b); c != 0 {
			return c
		}
		n = m.nodes[n].fail
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
		l := int(m.nodes[n].longest)
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
