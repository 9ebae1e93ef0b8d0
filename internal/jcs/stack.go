package jcs

import "iter"

// stack holds the elements of the arrays (or members of the objects) being
// parsed, nested ones above outer ones. It grows in chunks and never moves
// what it holds, so a huge array costs its elements once on the stack and
// once in the finished slice, without the copies and garbage of a slice
// grown by append; chunks are reused by every later array of the document.
type stack[T any] struct {
	chunks [][]T // all full up to top; len is the part in use
	top    int   // chunk being filled
}

// stackMark is a position in a stack: chunk index and offset in it.
type stackMark struct{ chunk, off int }

func (s *stack[T]) mark() stackMark {
	if len(s.chunks) == 0 {
		return stackMark{}
	}
	return stackMark{s.top, len(s.chunks[s.top])}
}

func (s *stack[T]) push(v T) {
	if len(s.chunks) == 0 {
		s.chunks = append(s.chunks, make([]T, 0, firstChunk))
	}
	c := s.chunks[s.top]
	if len(c) == cap(c) {
		s.top++
		if s.top == len(s.chunks) {
			s.chunks = append(s.chunks, make([]T, 0, min(2*cap(c), maxChunk)))
		}
		c = s.chunks[s.top]
	}
	s.chunks[s.top] = append(c, v)
}

// since returns the elements pushed since m, chunk by chunk, for reading.
func (s *stack[T]) since(m stackMark) iter.Seq[[]T] {
	return func(yield func([]T) bool) {
		if len(s.chunks) == 0 {
			return
		}
		for i := m.chunk; i <= s.top; i++ {
			c := s.chunks[i]
			if i == m.chunk {
				c = c[m.off:]
			}
			if len(c) > 0 && !yield(c) {
				return
			}
		}
	}
}

// popTo removes the elements pushed since m and returns them in a new slice
// of exactly their number, or nil if there are none.
func (s *stack[T]) popTo(m stackMark) []T {
	n := 0
	for c := range s.since(m) {
		n += len(c)
	}
	if n == 0 {
		return nil
	}
	out := make([]T, 0, n)
	for c := range s.since(m) {
		out = append(out, c...)
	}
	for i := m.chunk + 1; i <= s.top; i++ {
		s.chunks[i] = s.chunks[i][:0]
	}
	s.chunks[m.chunk] = s.chunks[m.chunk][:m.off]
	s.top = m.chunk
	return out
}

// reset empties the stack for another document, keeping only its first chunk, cleared so
// that it holds no strings of the last one.
func (s *stack[T]) reset() stack[T] {
	if len(s.chunks) == 0 {
		return stack[T]{}
	}
	first := s.chunks[0]
	clear(first[:cap(first)])
	clear(s.chunks[1:])
	return stack[T]{chunks: append(s.chunks[:0], first[:0])}
}
