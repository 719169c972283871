package resourceset

// SkipError says that ferry cannot render a ResourceSet offline, and why:
// a caller lists it as skipped instead of failing the run.
type SkipError struct {
	// ResourceSet is the skipped object as Kind/namespace/name.
	ResourceSet string
	// Reason says what stops the render and, where there is one, what
	// would let ferry render it.
	Reason string
}

func (e *SkipError) Error() string { return e.ResourceSet + ": " + e.Reason }
