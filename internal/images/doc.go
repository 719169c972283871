// Package images keeps image references in a repository up to date: it
// lists the tags of registry repositories (with credentials it reads from
// the environment and Docker's config), picks the latest one per image
// policy (Flux's semver, numerical and alphabetical policies), rewrites the
// YAML lines that carry an image setter marker, and reports what changed
// as text and markdown.
package images
